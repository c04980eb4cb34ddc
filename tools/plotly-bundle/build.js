// Bundles entry.js with plotly.js's own esbuild settings (esbuild-config.js of the plotly.js
// package), then lists every npm package that ended up in the bundle with its licence.
const esbuild = require('esbuild');
const fs = require('fs');
const path = require('path');
const { glsl } = require('esbuild-plugin-glsl');
const InlineCSSPlugin = require('esbuild-plugin-inline-css');
const { environmentPlugin } = require('esbuild-plugin-environment');

const out = process.argv[2] || 'plotly-roofline.js';
const empty = path.resolve(__dirname, 'empty.css');
fs.writeFileSync(empty, '');
esbuild.build({
    entryPoints: [path.resolve(__dirname, 'entry.js')], outfile: out, format: 'iife', globalName: 'Plotly',
    bundle: true, minify: false, metafile: true, legalComments: 'none', target: 'es2016', logLevel: 'warning',
    plugins: [InlineCSSPlugin(), glsl({ minify: true }), environmentPlugin({ NODE_DEBUG: false })],
    // regl: plotly's fork, as in plotly's build; maplibre's stylesheet is pulled in by the trace
    // registry for map traces, which these pages never draw
    alias: { regl: '@plotly/regl', stream: 'stream-browserify', 'maplibre-gl/dist/maplibre-gl.css': empty },
    define: { global: 'window', 'define.amd': 'false' },
}).then((r) => {
    const pkgs = {};
    for (const input of Object.keys(r.metafile.inputs)) {
        const m = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/g);
        if (!m) continue;
        const dir = input.slice(0, input.lastIndexOf(m[m.length - 1]) + m[m.length - 1].length);
        const name = m[m.length - 1].slice('node_modules/'.length);
        if (pkgs[name]) continue;
        const meta = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
        pkgs[name] = `${meta.name} ${meta.version} (${typeof meta.license === 'string' ? meta.license : JSON.stringify(meta.license)})`;
    }
    fs.writeFileSync('bundled-packages.txt', Object.keys(pkgs).sort().map((k) => pkgs[k]).join('\n') + '\n');
    console.log(`${out}: ${Object.keys(pkgs).length} packages`);
});
