#!/bin/sh
# Rebuilds src/roofline/report/vendor/plotly-roofline.min.js from npm (needs node >= 20 and the npm
# registry; nothing else). Run from this folder: ./build.sh
set -eu
VERSION=4.1.1  # the plotly.js version that the plotly Python package ships
work=$(mktemp -d)
cp entry.js build.js "$work"/
cd "$work"
npm init -y >/dev/null
npm install --loglevel=error --ignore-scripts --no-audit --no-fund "plotly.js@$VERSION" esbuild@0.28.1 esbuild-plugin-environment@0.5.0 \
    esbuild-plugin-glsl@1.4.2 esbuild-plugin-inline-css@0.0.1 stream-browserify@3.0.0 buffer@6.0.3 terser@5.51.2 >/dev/null
node build.js plotly-roofline.js
npx terser plotly-roofline.js --compress --mangle -o plotly-roofline.min.js
vendor="$OLDPWD/../../src/roofline/report/vendor"
{ printf '/* plotly.js v%s (MIT, Copyright 2012-2026 Plotly, Inc.): core (scatter), built by tools/plotly-bundle;\n' "$VERSION"
  printf '   licences of the bundled packages: bundled-packages.txt beside this file */\n'
  cat plotly-roofline.min.js; } > "$vendor/plotly-roofline.min.js"
cp node_modules/plotly.js/LICENSE "$vendor/LICENSE-plotly.js.txt"
cp bundled-packages.txt "$vendor/bundled-packages.txt"
sha256sum "$vendor/plotly-roofline.min.js"
rm -rf "$work"
