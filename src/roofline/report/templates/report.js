/* roofline HTML report: filters, charts, tables. Data comes from the JSON block only; every
   string from a profile is written with textContent, or entity-escaped for plotly labels. */
(function () {
  'use strict';
  var block = document.getElementById('roofline-data');
  function decode() {
    if (block.dataset.encoding !== 'gzip+base64') return Promise.resolve(JSON.parse(block.textContent));
    var bytes;
    if (Uint8Array.fromBase64) bytes = Uint8Array.fromBase64(block.textContent.trim());  // native: ~10x the loop's speed
    else {
      var bin = atob(block.textContent); bytes = new Uint8Array(bin.length);
      for (var b = 0; b < bin.length; b++) bytes[b] = bin.charCodeAt(b);
    }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Response(stream).text().then(JSON.parse);
  }
  var T0 = performance.now(), marks = {};
  marks.script = Math.round(T0);
  function mark(name) { marks[name] = Math.round(performance.now() - T0); }
  decode().then(function (d) { mark('decoded'); return d; }).then(start).catch(function (e) {
    document.body.insertBefore(document.createTextNode('This report could not be read: ' + e), document.body.firstChild);
    throw e;
  });
  function start(D) {
    var M = D.meta, K = D.kernels, N = M.count, LEVELS = M.levels;
    var SYMBOLS = {dram: 'circle', l2: 'square', l1: 'triangle-up', lds: 'diamond'};
    var ROOF_COLOURS = {fp64: '#6a3d9a', fp32: '#1f78b4', fp16: '#33a02c', tensor: '#e31a1c'};
    // point colours carry a meaning, named in the legend: the bound, or the precision (then the same
    // colour as that precision's flat roof)
    var COLOURS = {
      bound: {'compute-bound': '#d62728', 'memory-bound': '#1f77b4', 'latency-limited': '#8c8c8c', unavailable: '#e0a800'},
      precision: {fp64: '#6a3d9a', fp32: '#1f78b4', fp16: '#33a02c', tensor: '#e31a1c', none: '#8c8c8c'}
    };
    var OTHER_COLOUR = '#e0a800';
    var DASH = {dram: 'solid', l2: 'dash', l1: 'dot', lds: 'dashdot'};
    // SVG markers up to SVG_LIMIT points; above it the points go on a 2D canvas laid over the plot
    // area (drawn from the same traces, which plotly then keeps invisible). A canvas draws 50,000
    // points in tens of milliseconds on the CPU, where plotly's WebGL traces cost seconds in a browser
    // without a GPU (software WebGL: shader compiles, then every frame read back for compositing).
    var CUT = {name: 160, note: 110};  // longer names and notes are cut in table cells (in full in the tooltip and details)
    var PAGE = 50, JOIN_LIMIT = 2000, CHART_LIMIT = 20000, SVG_LIMIT = 3000;
    var state = {filtered: [], page: 0, sortKey: 'time', sortDir: -1, levelsOn: {}, colour: 'bound', nameError: ''};

    function esc(s) {  // plotly renders a subset of HTML in labels: show names as text
      return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');  // plotly knows no &quot;
    }
    function si(v, unit) {
      if (v === null || v === undefined || !isFinite(v)) return 'n/a';
      var a = Math.abs(v), p = [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k'], [1, ''], [1e-3, 'm'], [1e-6, 'µ'], [1e-9, 'n']];
      if (a === 0) return '0 ' + unit;
      for (var i = 0; i < p.length; i++) if (a >= p[i][0]) return (v / p[i][0]).toPrecision(3) + ' ' + p[i][1] + unit;
      return v.toPrecision(3) + ' ' + unit;
    }
    function num(v, d) { return (v === null || v === undefined || !isFinite(v)) ? 'n/a' : Number(v).toPrecision(d || 3); }
    function cat(key, i) { var c = K[key + '_code'][i]; return c < 0 ? '' : K.categories[key][c]; }
    function el(tag, text, cls) { var e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; }
    function drawn(i) {
      if (!(K.achieved[i] > 0)) return false;
      for (var j = 0; j < LEVELS.length; j++) { var x = K['int_' + LEVELS[j]][i]; if (x !== null && x > 0) return true; }
      return false;
    }

    // ---- filters -------------------------------------------------------------------------------
    function precisionBase(p) { return p.indexOf('tensor') === 0 ? 'tensor' : p; }
    function deviceRoofs() { return D.roofs[state.device] || []; }
    var DEVICES = {};  // per device: kernels, kernels drawn, total and drawable time
    function deviceStats() {
      for (var i = 0; i < N; i++) {
        var d = cat('device', i), s = DEVICES[d] || (DEVICES[d] = {n: 0, drawn: 0, time: 0, drawnTime: 0});
        s.n++; s.time += K.time[i] || 0;
        if (drawn(i)) { s.drawn++; s.drawnTime += K.time[i] || 0; }
      }
      // the device with the most drawable time comes first, so the page opens on something to see (the
      // order the PNG charts follow too: chart_data.device_order, which puts rows naming no device last)
      var given = (M.device_order || []).filter(function (d) { return DEVICES[d]; });
      return given.concat(Object.keys(DEVICES).filter(function (d) { return given.indexOf(d) < 0; }).sort(function (a, b) {
        return (DEVICES[b].drawnTime - DEVICES[a].drawnTime) || (DEVICES[b].drawn - DEVICES[a].drawn) || (DEVICES[b].time - DEVICES[a].time);
      }));
    }
    function deviceName(d) { return d || 'unknown device'; }
    function setupFilters() {
      var dv = document.getElementById('f-device');
      deviceStats().forEach(function (d) {
        var s = DEVICES[d];
        dv.appendChild(el('option', deviceName(d) + ' (' + (s.drawn ? s.drawn + ' of ' + s.n + ' kernel(s) drawable' : 'nothing drawable') + ')')).value = d;
      });
      state.device = dv.value || '';
      dv.addEventListener('input', function () {
        state.device = dv.value; RANGE = null; drawHeadline(); levelBoxes(); drawPeaks(); applyFilters(); if (anyDrawn) drawPrograms(); drawSteps();
      });
      var cb = document.getElementById('f-colour');
      cb.addEventListener('input', function () { state.colour = cb.value; drawKernels(); });
      var b = document.getElementById('f-bound');
      (K.categories ? K.categories.bound : []).forEach(function (v) { b.appendChild(el('option', v)).value = v; });
      var p = document.getElementById('f-precision'), seen = {};
      (K.categories ? K.categories.precision : []).forEach(function (v) {
        var base = precisionBase(v);
        if (!seen[base]) { seen[base] = 1; p.appendChild(el('option', base)).value = base; }
      });
      var box = document.getElementById('f-levels');
      LEVELS.forEach(function (lv) {
        state.levelsOn[lv] = true;
        var lab = el('label'), cb = el('input');
        lab.id = 'f-level-box-' + lv;
        cb.type = 'checkbox'; cb.checked = true; cb.id = 'f-level-' + lv;
        cb.addEventListener('change', function () { state.levelsOn[lv] = cb.checked; drawKernels(); });
        lab.appendChild(cb); lab.appendChild(document.createTextNode(' ' + M.level_labels[lv] + ' '));
        box.appendChild(lab);
      });
      ['f-name', 'f-bound', 'f-precision'].forEach(function (id) {
        document.getElementById(id).addEventListener('input', applyFilters);
      });
    }
    function levelBoxes() {  // a box only for a level some kernel of the device has bytes at (traces: DRAM only)
      LEVELS.forEach(function (lv) {
        var has = false, b = K['bytes_' + lv];
        for (var i = 0; i < N && !has; i++) if (cat('device', i) === state.device && b[i] > 0) has = true;
        document.getElementById('f-level-box-' + lv).hidden = !has;
      });
    }
    // ---- the headline of the device: GPU time, coverage, time by kind, MFU (analysis/headline.py) ------
    var KIND_COLOURS = {'compute-bound': '#d62728', 'memory-bound': '#1f77b4', 'latency-limited': '#8c8c8c',
      'no roof': '#e0a800', communication: '#9467bd', 'copies/memsets': '#17becf', idle: '#e5e7eb', unmodelled: '#f4a582'};
    function pctText(v) { return (v === null || v === undefined || !isFinite(v)) ? 'n/a' : (100 * v).toFixed(1) + '%'; }
    function headlineOf(d) { return (D.headline || {})[d] || null; }
    function drawHeadline() {
      var box = document.getElementById('headline'), h = headlineOf(state.device);
      box.textContent = '';
      if (!h) return;
      var p = el('p'), big = el('span', 'GPU time ' + si(h.gpu_time_s, 's') + ' on ' + deviceName(state.device) + ': '
        + pctText(h.coverage) + ' of it has a roofline point', 'big');
      p.appendChild(big);
      var rate = [];
      if (h.achieved_flop_per_s !== null) rate.push('achieved ' + si(h.achieved_flop_per_s, 'FLOP/s') + (h.compute_peak
        ? ' = ' + pctText(h.mfu) + ' of the ' + h.compute_peak.key + ' peak ' + si(h.compute_peak.value, 'FLOP/s') + ' (' + h.compute_peak.basis + '; MFU)' : ''));
      if (h.achieved_dram_bytes_per_s !== null) rate.push(si(h.achieved_dram_bytes_per_s, 'B/s') + ' DRAM' + (h.dram_peak
        ? ' = ' + pctText(h.mbu) + ' of ' + si(h.dram_peak.value, 'B/s') + ' (' + h.dram_peak.basis + '; MBU)' : ''));
      if (rate.length) p.appendChild(document.createTextNode(' · ' + rate.join(' · ')));
      box.appendChild(p);
      var bar = el('div', undefined, 'kinds'), key = el('div', undefined, 'kinds-key');
      bar.id = 'kinds-bar';
      Object.keys(KIND_COLOURS).forEach(function (k) {
        var v = h.shares[k]; if (!(v > 0)) return;
        var seg = el('span'); seg.style.width = (100 * v) + '%'; seg.style.background = KIND_COLOURS[k];
        seg.title = k + ' ' + pctText(v); seg.dataset.kind = k; bar.appendChild(seg);
        var sw = el('i'); sw.style.background = KIND_COLOURS[k]; key.appendChild(sw);
        key.appendChild(document.createTextNode(k + ' ' + pctText(v)));
      });
      box.appendChild(bar); box.appendChild(key);
      if (h.comm_exposed_s !== null && h.comm_exposed_s !== undefined) {  // collectives (docs/collectives.md)
        var comm = 'collectives: ' + si(h.comm_exposed_s + h.comm_overlapped_s, 's') + ' of NCCL/RCCL kernels, ' +
          si(h.comm_exposed_s, 's') + ' exposed (' + pctText(h.gpu_time_s > 0 ? h.comm_exposed_s / h.gpu_time_s : null) +
          ' of GPU time) and ' + si(h.comm_overlapped_s, 's') + ' overlapped with compute';
        if (h.comm_rows) comm += '; ' + h.comm_with_busbw + ' of ' + h.comm_rows + ' with a bus bandwidth' +
          (h.comm_median_pct_of_link_roof !== null ? ', median ' + h.comm_median_pct_of_link_roof.toPrecision(3) +
           '% of the link roof (' + h.comm_median_link + ')' : '');
        var cp = el('p', comm); cp.id = 'headline-comm'; box.appendChild(cp);
      }
      if (h.reasons && h.reasons.length) {
        var ul = el('ul', undefined, 'reasons');
        h.reasons.slice(0, 3).forEach(function (r) {
          ul.appendChild(el('li', pctText(r.share) + ' without a point: ' + r.reason + (r.fix ? ' — fix: ' + r.fix : '')));
        });
        if (h.reasons.length > 3) ul.appendChild(el('li', (h.reasons.length - 3) + ' more reason(s): roofline analyze --by summary'));
        box.appendChild(ul);
      }
    }
    function nameMatcher(q) {
      state.nameError = '';
      if (!q) return null;
      var m = /^\/(.*)\/$/.exec(q);
      if (m) {
        try { var rx = new RegExp(m[1], 'i'); return function (s) { return rx.test(s); }; } catch (e) {
          state.nameError = 'invalid regular expression: ' + e.message + ' (no kernel matches)';
          return function () { return false; };
        }
      }
      q = q.toLowerCase();
      return function (s) { return s.toLowerCase().indexOf(q) >= 0; };
    }
    function applyFilters() {
      var match = nameMatcher(document.getElementById('f-name').value.trim());
      var err = document.getElementById('f-name-error');
      err.textContent = state.nameError; err.hidden = !state.nameError;
      var bound = document.getElementById('f-bound').value, prec = document.getElementById('f-precision').value;
      var out = [];
      for (var i = 0; i < N; i++) {
        if (cat('device', i) !== state.device) continue;
        if (match && !match(K.name[i])) continue;
        if (bound && cat('bound', i) !== bound) continue;
        if (prec && precisionBase(cat('precision', i)) !== prec) continue;
        out.push(i);
      }
      state.filtered = out; state.page = 0;
      sortRows();
      var dn = DEVICES[state.device] || {n: 0};
      document.getElementById('f-count').textContent = out.length + ' of ' + dn.n + ' kernel(s) on this device'
        + (N > dn.n ? ' (' + N + ' in the report)' : '');
      drawNote(); drawKernels(); drawTable(); drawTop();
    }
    function drawNote() {
      var s = DEVICES[state.device] || {n: 0, drawn: 0}, note = document.getElementById('device-note'), text = '';
      var h = headlineOf(state.device), why = h && h.reasons && h.reasons.length ? h.reasons[0] : null;
      if (!s.drawn) text = 'Nothing drawable on ' + deviceName(state.device) + ': none of its ' + s.n
        + ' kernel(s) has both FLOPs and bytes: ' + (why ? why.reason + (why.fix ? ' (fix: ' + why.fix + ')' : '')
        : 'their FLOPs are 0 (copies and data movement have no point on a FLOP/s axis)') + '. The tables list them.';
      else if (s.drawn < s.n) text = (s.n - s.drawn) + ' of ' + s.n + ' kernel(s) on ' + deviceName(state.device)
        + ' have no FLOPs or no bytes and are listed, not drawn.';
      note.textContent = text; note.hidden = !text;
    }

    // ---- charts --------------------------------------------------------------------------------
    // ---- the canvas layer of large charts ---------------------------------------------------------
    var CANVAS = null, GRID = {}, TIP = null, CELL = 12, LAYERS = [];
    function drawCanvas() {
      var gd = document.getElementById('kernel-chart'), L = gd._fullLayout;
      var layers = LAYERS;
      var host = gd.querySelector('.svg-container'), under = host && host.querySelectorAll('.main-svg')[1];
      GRID = {}; state.canvasPoints = 0; if (TIP) TIP.hidden = true;
      if (!layers.length || !L || !L.xaxis || !host) { if (CANVAS) CANVAS.style.display = 'none'; return; }
      if (!CANVAS) {
        CANVAS = el('canvas'); CANVAS.id = 'kernel-canvas'; CANVAS.style.position = 'absolute'; CANVAS.style.pointerEvents = 'none';
      }
      if (CANVAS.parentNode !== host) host.insertBefore(CANVAS, under || null);  // under the legend and hover layers
      var sz = L._size, xa = L.xaxis, ya = L.yaxis, dpr = window.devicePixelRatio || 1;
      CANVAS.style.display = ''; CANVAS.style.left = sz.l + 'px'; CANVAS.style.top = sz.t + 'px';
      CANVAS.style.width = sz.w + 'px'; CANVAS.style.height = sz.h + 'px';
      CANVAS.width = Math.round(sz.w * dpr); CANVAS.height = Math.round(sz.h * dpr);
      // willReadFrequently: a CPU canvas (the GPU-backed one goes through software GL without a GPU)
      // the markers are stamped into the pixels directly: one canvas path of 20,000 arcs, or 54,000
      // drawImage calls, took seconds; 54,000 stamps of ~40 pixels take milliseconds
      var ctx = CANVAS.getContext('2d', {willReadFrequently: true}), r = 3, W = CANVAS.width, H = CANVAS.height;
      var img = ctx.createImageData(W, H), px32 = new Uint32Array(img.data.buffer);
      layers.forEach(function (t) {
        var mask = stamp(t.marker.symbol, Math.round(r * dpr)), col = rgba32(t.marker.color);
        for (var j = 0; j < t.x.length; j++) {
          var px = xa.l2p(Math.log10(t.x[j])), py = ya.l2p(Math.log10(t.y[j]));
          if (!(px >= -r && py >= -r && px <= sz.w + r && py <= sz.h + r)) continue;
          var X = Math.round(px * dpr), Y = Math.round(py * dpr);
          for (var m = 0; m < mask.length; m += 2) {
            var x = X + mask[m], y = Y + mask[m + 1];
            if (x >= 0 && y >= 0 && x < W && y < H) px32[y * W + x] = col;
          }
          var key = Math.floor(px / CELL) + ':' + Math.floor(py / CELL);
          (GRID[key] || (GRID[key] = [])).push({x: px, y: py, t: t, j: j});
          state.canvasPoints++;
        }
      });
      ctx.putImageData(img, 0, 0);
    }
    function stamp(symbol, R) {  // pixel offsets [dx, dy, ...] of a marker of radius R
      var out = [];
      for (var dy = -R - 1; dy <= R; dy++) for (var dx = -R - 1; dx <= R + 1; dx++) {
        var inside = symbol === 'square' ? Math.abs(dx) <= R && Math.abs(dy) <= R
          : symbol === 'triangle-up' ? Math.abs(dx) <= (dy + R + 1) * 0.58
          : dx * dx + dy * dy <= R * R + R;
        if (inside) out.push(dx, dy);
      }
      return out;
    }
    function rgba32(hex) {  // '#rrggbb' as one little-endian RGBA pixel, opaque
      var v = parseInt(hex.slice(1), 16);
      return ((255 << 24) | ((v & 255) << 16) | (v & 0xff00) | (v >> 16)) >>> 0;
    }
    function nearest(x, y) {  // the canvas point within 8 px of (x, y), plot-area pixels
      var best = null, bd = 64, cx = Math.floor(x / CELL), cy = Math.floor(y / CELL);
      for (var gx = cx - 1; gx <= cx + 1; gx++) for (var gy = cy - 1; gy <= cy + 1; gy++) {
        (GRID[gx + ':' + gy] || []).forEach(function (p) {
          var d = (p.x - x) * (p.x - x) + (p.y - y) * (p.y - y); if (d < bd) { bd = d; best = p; }
        });
      }
      return best;
    }
    function canvasHover(ev) {
      if (!CANVAS || CANVAS.style.display === 'none') return;
      var r = CANVAS.getBoundingClientRect(), p = nearest(ev.clientX - r.left, ev.clientY - r.top);
      if (!TIP) { TIP = el('div', '', 'canvas-tip'); document.getElementById('kernel-chart').appendChild(TIP); }
      if (!p) { TIP.hidden = true; return; }
      var i = p.t.customdata[p.j], lv = p.t.meta.slice(6);
      showDetails(i);
      TIP.textContent = K.short[i] + '\n' + (cat('bound', i) || '') + ', ' + (cat('precision', i) || 'no FLOPs') + '\n'
        + M.level_labels[lv] + ': ' + num(p.t.x[p.j]) + ' FLOP/B, ' + si(p.t.y[p.j], 'FLOP/s');
      TIP.style.left = (CANVAS.offsetLeft + p.x + 10) + 'px'; TIP.style.top = (CANVAS.offsetTop + p.y + 10) + 'px';
      TIP.hidden = false;
    }

    var RANGE = null;
    function ranges() {
      if (RANGE) return RANGE;
      var xs = [], ys = [];
      for (var i = 0; i < N; i++) {
        if (!(K.achieved[i] > 0) || cat('device', i) !== state.device) continue;
        ys.push(K.achieved[i]);
        LEVELS.forEach(function (lv) { var x = K['int_' + lv][i]; if (x > 0) xs.push(x); });
      }
      deviceRoofs().forEach(function (r) { if (r.kind === 'compute') ys.push(r.value); });
      var top = topCompute();
      deviceRoofs().forEach(function (r) { if (r.kind === 'bandwidth' && top) xs.push(top / r.value); });
      function lim(a, lo, hi) {
        if (!a.length) return [lo, hi];
        var mn = Infinity, mx = -Infinity; a.forEach(function (v) { if (v < mn) mn = v; if (v > mx) mx = v; });
        return [Math.floor(Math.log10(mn) - 0.3), Math.ceil(Math.log10(mx) + 0.3)];
      }
      RANGE = {x: lim(xs, -2, 3), y: lim(ys, 9, 15)};
      return RANGE;
    }
    function topCompute() { var t = 0; deviceRoofs().forEach(function (r) { if (r.kind === 'compute' && r.value > t) t = r.value; }); return t; }
    function roofKind(key) { var h = key.indexOf('#'); return h < 0 ? key : key.slice(0, h); }  // 'dram#3' -> 'dram'
    function roofTraces() {
      // one trace per roof kind, whatever the number of roof sets: a device whose kernels ran under many sets
      // (125 sets of ~10 roofs) draws each kind as one line of segments split by nulls, where a trace per roof
      // (1,250) cost plotly most of each chart's draw. One legend entry per kind, a click on it toggles every
      // set's roof of that kind, and each segment's hover (its points' text) names its own roof and set; sets
      // whose roof of a kind is the same line (same value, same ends) share one segment (plotly draws a path
      // per segment), its hover naming every set of them
      var R = ranges(), x0 = Math.pow(10, R.x[0]), x1 = Math.pow(10, R.x[1]), top = topCompute() || Math.pow(10, R.y[1]);
      var kinds = [], byKind = {}, sets = {}, minRidge = x1;
      function segment(r, x, y, line) {
        var kind = roofKind(r.key), t = byKind[kind], at = x.concat(y).join(' ');
        if (!t) {
          kinds.push(kind); sets[kind] = 0;
          t = byKind[kind] = {type: 'scatter', mode: 'lines', x: [], y: [], text: [], name: esc(r.label), line: line,
            hovertemplate: '%{text}<extra></extra>', meta: 'roof:' + kind, legendgroup: 'roof:' + kind};
          t.segments = {};
        }
        sets[kind]++;
        if (t.segments[at]) { t.segments[at].labels.push(r.label); return; }
        if (t.x.length) { t.x.push(null); t.y.push(null); t.text.push(null); }
        t.segments[at] = {at: t.x.length, labels: [r.label]};
        t.x.push(x[0], x[1]); t.y.push(y[0], y[1]); t.text.push(esc(r.label), esc(r.label));
      }
      deviceRoofs().forEach(function (r) {
        if (r.kind !== 'bandwidth') return;
        var xe = top / r.value; if (xe < minRidge) minRidge = xe;
        segment(r, [x0, xe], [r.value * x0, top], {color: '#444', dash: DASH[roofKind(r.key)] || 'solid', width: 1.5});
      });
      deviceRoofs().forEach(function (r) {
        if (r.kind !== 'compute') return;
        var xs = Math.min(minRidge, x1);
        deviceRoofs().forEach(function (b) { if (b.kind === 'bandwidth') xs = Math.min(xs, r.value / b.value); });
        segment(r, [xs, x1], [r.value, r.value], {color: ROOF_COLOURS[roofKind(r.key)] || '#333', width: 2});
      });
      return kinds.map(function (kind) {  // the entry names the kind (and how many sets), each segment its own roof
        var t = byKind[kind];
        Object.keys(t.segments).forEach(function (at) {
          var s = t.segments[at];
          if (s.labels.length > 1) t.text[s.at] = t.text[s.at + 1] = esc(sharedLabel(s.labels));
        });
        delete t.segments;
        if (sets[kind] > 1) t.name = t.name.replace(/ \[roof set [^\]]*\]$/, '') + ' … ' + sets[kind] + ' roof sets';
        return t;
      });
    }
    function sharedLabel(labels) {  // 'DRAM 2 TB/s (counters) [roof sets 1–3, 7 of 9: 40 kernel(s)]'
      var m = labels.map(function (l) { return /^(.*) \[roof set (\d+) of (\d+): (\d+) kernel\(s\)\]$/.exec(l); });
      if (m.some(function (x) { return !x; })) return labels.join('; ');
      var nums = m.map(function (x) { return +x[2]; }).sort(function (a, b) { return a - b; }), parts = [], kernels = 0;
      m.forEach(function (x) { kernels += +x[4]; });
      for (var i = 0; i < nums.length; i++) {
        var j = i; while (j + 1 < nums.length && nums[j + 1] === nums[j] + 1) j++;
        parts.push(j > i ? nums[i] + '–' + nums[j] : String(nums[i])); i = j;
      }
      return m[0][1] + ' [roof sets ' + parts.join(', ') + ' of ' + m[0][3] + ': ' + kernels + ' kernel(s)]';
    }
    // tick labels of our own, one per decade, always SI (plotly's 'SI' format turns to powers of ten past
    // 10^14: 100T, then 10^15 and 10^16, on one axis)
    var TICKS = {vals: [], text: []};
    (function () {
      var P = [[1e18, 'E'], [1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k'], [1, ''], [1e-3, 'm'], [1e-6, 'µ'], [1e-9, 'n']];
      for (var e = -9; e <= 20; e++) {
        var v = Math.pow(10, e), t = String(v);
        for (var i = 0; i < P.length; i++) if (v >= P[i][0] * 0.999) { t = String(Math.round(v / P[i][0])) + P[i][1]; break; }
        TICKS.vals.push(v); TICKS.text.push(t);
      }
    }());
    function layout(title) {
      var R = ranges();
      return {title: {text: esc(title), font: {size: 13}}, margin: {l: 70, r: 10, t: 40, b: 50}, hovermode: 'closest',
        // a label per decade only: plotly's default also labels 2 and 5 between them, which clutters
        // the axes and costs a text measurement (a forced layout) per label
        xaxis: {type: 'log', range: R.x, tickmode: 'array', tickvals: TICKS.vals, ticktext: TICKS.text,
          title: {text: 'arithmetic intensity (FLOP/byte)'}},
        yaxis: {type: 'log', range: R.y, tickmode: 'array', tickvals: TICKS.vals, ticktext: TICKS.text,
          title: {text: 'performance (FLOP/s)'}},
        // a click on a roof's entry toggles that kind in every roof set (its legend group); marker keys are
        // explanations only (their group holds no points)
        legend: {font: {size: 10}, itemclick: 'toggle', itemdoubleclick: false, groupclick: 'togglegroup'}};
    }
    function chartRows() {
      // K is longest first, so the lowest indices are the longest kernels of the current filter
      var rows = state.filtered.slice().sort(function (a, b) { return a - b; });
      return rows.length > CHART_LIMIT ? rows.slice(0, CHART_LIMIT) : rows;
    }
    function colourKey(i) {
      if (state.colour === 'precision') { var p = cat('precision', i); return p ? precisionBase(p) : 'none'; }
      return cat('bound', i) || 'unavailable';
    }
    function colourOf(key) { return COLOURS[state.colour][key] || OTHER_COLOUR; }
    function legendKey(name, colour, symbol, group, title) {  // a legend entry that only explains a marker
      return {type: 'scatter', mode: 'markers', x: [null], y: [null], name: esc(name), hoverinfo: 'skip', showlegend: true,
        marker: {color: colour, symbol: symbol, size: 9}, legendgroup: group, legendgrouptitle: {text: title}, meta: 'key:' + group};
    }
    function drawKernels() {
      var traces = roofTraces(), rows = chartRows(), joins = {x: [], y: []}, seen = {}, shapes = [], total = 0, layers = [];
      LEVELS.forEach(function (lv) {
        if (!state.levelsOn[lv]) return;
        for (var j = 0; j < rows.length; j++) if (K['int_' + lv][rows[j]] > 0 && K.achieved[rows[j]] > 0) total++;
      });
      var onCanvas = total > SVG_LIMIT;
      LEVELS.forEach(function (lv) {
        if (!state.levelsOn[lv]) return;
        // one trace per level and colour: a single colour per trace is much cheaper to draw in WebGL
        // than a colour per point
        var by = {}, key = 'int_' + lv;
        for (var j = 0; j < rows.length; j++) {
          var i = rows[j], x = K[key][i], y = K.achieved[i];
          if (!(x > 0) || !(y > 0)) continue;
          var ck = colourKey(i), t = by[ck] || (by[ck] = {x: [], y: [], cd: [], text: []});
          t.x.push(x); t.y.push(y); t.cd.push(i);
          if (!onCanvas) t.text.push(esc(K.short[i]) + '<br>' + esc(cat('bound', i)) + ', ' + esc(cat('precision', i) || 'no FLOPs'));
        }
        Object.keys(by).forEach(function (ck) {
          seen[ck] = 1; if (shapes.indexOf(lv) < 0) shapes.push(lv);
          var t = {type: 'scatter', mode: 'markers', name: esc(ck) + ' at ' + esc(M.level_labels[lv]), x: by[ck].x, y: by[ck].y,
            customdata: by[ck].cd, text: by[ck].text, meta: 'level:' + lv, legendgroup: ck, showlegend: false,
            marker: {symbol: SYMBOLS[lv], size: 8, color: colourOf(ck), line: {width: 0}},
            hovertemplate: '%{text}<br>' + esc(M.level_labels[lv]) + ': %{x:.3g} FLOP/B, %{y:.3s}FLOP/s<extra></extra>'};
          // canvas points stay out of plotly: 50,000 points held in its traces, even invisible ones,
          // delayed the first frame by 2 s
          if (onCanvas) layers.push(t); else traces.push(t);
        });
      });
      var order = Object.keys(COLOURS[state.colour]);
      Object.keys(seen).sort(function (a, b) { return (order.indexOf(a) + 99) % 99 - (order.indexOf(b) + 99) % 99; }).forEach(function (k) {
        traces.push(legendKey(k, colourOf(k), 'circle', 'colour', 'colour = ' + state.colour));
      });
      shapes.forEach(function (lv) {
        traces.push(legendKey(M.level_labels[lv], '#555', SYMBOLS[lv], 'shape', 'shape = memory level'));
      });
      var on = LEVELS.filter(function (lv) { return state.levelsOn[lv]; });
      // lines joining a kernel's levels, for charts small enough to read them
      for (var j = 0; j < rows.length && rows.length <= JOIN_LIMIT && shapes.length > 1; j++) {
        var i = rows[j];
        if (!(K.achieved[i] > 0)) continue;
        on.forEach(function (lv) { var x = K['int_' + lv][i]; if (x > 0) { joins.x.push(x); joins.y.push(K.achieved[i]); } });
        joins.x.push(null); joins.y.push(null);
      }
      if (joins.x.length) traces.push({type: 'scatter', mode: 'lines', visible: !onCanvas, x: joins.x, y: joins.y, hoverinfo: 'skip',
        line: {width: 0.6, color: 'rgba(80,80,80,0.35)'}, name: 'same kernel', meta: 'join'});
      var hidden = 0; for (var k = 0; k < state.filtered.length; k++) if (!drawn(state.filtered[k])) hidden++;
      if (hidden) traces.push({type: 'scatter', mode: 'markers', x: [null], y: [null], meta: 'undrawn',
        name: hidden + ' kernel(s) without FLOPs or bytes: not drawn', marker: {opacity: 0}});
      var capped = state.filtered.length > CHART_LIMIT;
      if (capped) traces.push({type: 'scatter', mode: 'markers', x: [null], y: [null], meta: 'capped', marker: {opacity: 0},
        name: 'the ' + CHART_LIMIT + ' longest of ' + state.filtered.length + ' kernels drawn; the tables hold all'});
      pipeRoofs(rows).forEach(function (t) { traces.push(t); });
      var L = layout('kernels: one point per kernel and memory level');
      if (!total) L.annotations = [{text: (DEVICES[state.device] || {}).drawn ? 'no drawable kernel passes the filters'
        : 'nothing drawable on ' + esc(deviceName(state.device)), xref: 'paper', yref: 'paper', x: 0.5, y: 0.5,
        showarrow: false, font: {size: 15, color: '#92400e'}}];
      LAYERS = layers;
      state.levelCounts = {};
      LEVELS.forEach(function (lv) { state.levelCounts[lv] = 0; });
      traces.concat(layers).forEach(function (t) { if ((t.meta || '').indexOf('level:') === 0) state.levelCounts[t.meta.slice(6)] += t.x.length; });
      Plotly.react('kernel-chart', traces, L, {responsive: true, displaylogo: false});
      drawCanvas();
    }
    function pipeRoofs(rows) {  // a short flat "pipe roof" across the points of the longest pipe-bound kernels
      var out = [];
      for (var j = 0, n = 0; j < rows.length && n < 10 && K.pipe_roof; j++) {
        var i = rows[j], y = K.pipe_roof[i], xs = [];
        if (!(y > 0)) continue;
        LEVELS.forEach(function (lv) { var x = K['int_' + lv][i]; if (state.levelsOn[lv] && x > 0) xs.push(x); });
        if (!xs.length) continue;
        n++;
        out.push({type: 'scatter', mode: 'lines', x: [Math.min.apply(null, xs) / 1.6, Math.max.apply(null, xs) * 1.6], y: [y, y],
          name: esc(K.short[i]) + ': ' + esc((cat('pipe', i) || '').split(' (')[0]) + ' pipe roof', showlegend: false,
          hoverinfo: 'name', line: {color: '#b15928', dash: 'dot', width: 1.5}, meta: 'pipe:' + i});
      }
      return out;
    }
    function drawCollect() {
      var lines = M.collect || [], sec = document.getElementById('collect');
      if (!sec || !lines.length) return;
      document.getElementById('collect-list').textContent = lines.join('\n');
      sec.hidden = false;
    }
    function drawFindings() {  // ncu's findings ranked by estimated time saved (text only: textContent)
      var items = M.findings || [], sec = document.getElementById('findings');
      if (!sec || !items.length) return;
      var body = document.querySelector('#findings-table tbody');
      items.forEach(function (f) {
        var tr = document.createElement('tr');
        [String(f.rank), f.title, f.kernel, f.id === null ? '' : String(f.id), num(f.speedup) + '% ' + f.type,
         si(f.time, 's'), si(f.saved, 's'), f.focus].forEach(function (t) { tr.appendChild(el('td', t)); });
        body.appendChild(tr);
      });
      sec.hidden = false;
    }
    function drawPrograms() {
      var traces = roofTraces(), R = ranges();
      ['nvtx', 'program'].forEach(function (by) {  // programs last: on top of a range that spans the whole profile
        // kernels outside any NVTX range are the program's own point already
        var gs = D.groups.filter(function (g) { return g.by === by && g.achieved > 0 && g.device === state.device
          && !(by === 'nvtx' && (g.label === '(none)' || g.label === '')); });
        if (!gs.length) return;
        LEVELS.forEach(function (lv, li) {
          var pts = gs.filter(function (g) { return g['int_' + lv] > 0; });
          // one label per program or range (at the first level drawn), not one per level
          traces.push({type: 'scatter', mode: li ? 'markers' : 'markers+text', name: by + ' at ' + esc(M.level_labels[lv]),
            x: pts.map(function (g) { return g['int_' + lv]; }), y: pts.map(function (g) { return g.achieved; }),
            // labels point inwards, so a point near the right edge keeps its whole label
            text: pts.map(function (g) { return esc(g.label); }), textposition: pts.map(function (g) {
              return (by === 'program' ? 'top ' : 'bottom ') + (Math.log10(g['int_' + lv]) > (R.x[0] + R.x[1]) / 2 ? 'left' : 'right');
            }),
            textfont: {size: 9, color: by === 'program' ? '#111' : '#d95f02'},
            marker: {symbol: SYMBOLS[lv], size: by === 'program' ? 10 : 15, color: by === 'program' ? '#111' : '#d95f02'}, meta: by + ':' + lv,
            hovertemplate: '%{text}<br>%{x:.3g} FLOP/B, %{y:.3s}FLOP/s<extra></extra>'});
        });
      });
      var L = layout('programs and NVTX ranges (roofs of ' + esc(deviceName(state.device)) + ')');
      if (traces.every(function (t) { return (t.meta || '').indexOf('roof:') === 0; })) L.annotations = [{text: 'nothing drawable on '
        + esc(deviceName(state.device)), xref: 'paper', yref: 'paper', x: 0.5, y: 0.5, showarrow: false, font: {size: 15, color: '#92400e'}}];
      Plotly.react('program-chart', traces, L, {responsive: true, displaylogo: false});
    }

    // ---- details, tables -----------------------------------------------------------------------
    function showDetails(i) {
      var dl = document.getElementById('details-list'); dl.textContent = '';
      var rows = [['kernel', K.name[i]], ['id', K.id[i]], ['category', cat('category', i)], ['NVTX range', cat('nvtx', i) || '—'], ['device', cat('device', i)],
        ['time', si(K.time[i], 's')], ['FLOPs', si(K.flop[i], 'FLOP')], ['precision', cat('precision', i)],
        ['achieved', si(K.achieved[i], 'FLOP/s')]];
      LEVELS.forEach(function (lv) {
        rows.push([M.level_labels[lv] + ' bytes', si(K['bytes_' + lv][i], 'B')]);
        rows.push([M.level_labels[lv] + ' intensity', num(K['int_' + lv][i]) + ' FLOP/B']);
      });
      rows.push(['binding roof', cat('binding', i)], ['bound', cat('bound', i)], ['% of roof', num(K.pct[i])], ['note', cat('note', i) || '—']);
      // why it sits there: the busiest pipe, Nsight Compute's findings, the next step, what to collect
      [['latency cause', 'latency'], ['binding pipe', 'pipe'], ['ncu findings', 'findings'], ['next step', 'step'],
        ['collect next', 'collect']].forEach(function (w) {
        if (K[w[1] + '_code'] && cat(w[1], i)) rows.push([w[0], cat(w[1], i)]);
      });
      if (K.pipe_roof && K.pipe_roof[i] > 0) rows.push(['pipe roof', si(K.pipe_roof[i], 'FLOP/s')]);
      rows.forEach(function (r) { dl.appendChild(el('dt', r[0])); dl.appendChild(el('dd', String(r[1]))); });
      document.getElementById('details').dataset.kernel = String(i);
    }
    var COLUMNS = [['#', 'rank'], ['kernel', 'name'], ['category', 'category'], ['NVTX', 'nvtx'], ['time', 'time'], ['FLOP', 'flop'],
      ['precision', 'precision'], ['achieved', 'achieved']].concat(LEVELS.map(function (lv) { return ['I ' + M.level_labels[lv], 'int_' + lv]; }))
      .concat([['roof', 'binding'], ['bound', 'bound'], ['% roof', 'pct'], ['notes', 'note']]);
    function value(key, i) {
      if (key === 'rank') return i;
      if (key === 'nvtx' || key === 'precision' || key === 'binding' || key === 'bound' || key === 'category') return cat(key, i);
      if (key === 'note') return noteRefs(i).map(function (r) { return r + 1; }).join(',') + (drawn(i) ? '' : ' (not drawn)');
      if (key === 'name') return K.name[i];
      return K[key][i];
    }
    function noteRefs(i) { var c = K.note_code[i]; return c < 0 || !K.note_refs ? [] : K.note_refs[c]; }
    function drawNotes(rows) {  // each note once, numbered as the table's notes column refers to it
      var used = {}, list = document.getElementById('notes-list');
      rows.forEach(function (i) { noteRefs(i).forEach(function (r) { used[r] = 1; }); });
      list.textContent = '';
      Object.keys(used).map(Number).sort(function (a, b) { return a - b; }).forEach(function (r) {
        var li = el('li', K.note_parts[r]); li.value = r + 1; list.appendChild(li);
      });
    }
    function cell(key, i) {
      var v = value(key, i);
      if (key === 'time') return si(v, 's'); if (key === 'flop') return si(v, 'FLOP'); if (key === 'achieved') return si(v, 'FLOP/s');
      if (key === 'pct' || key.indexOf('int_') === 0) return num(v);
      if (key === 'rank') return String(v + 1);
      return v === null || v === undefined ? '' : String(v);
    }
    function sortRows() {
      var k = state.sortKey, d = state.sortDir;
      state.filtered.sort(function (a, b) {
        var x = value(k, a), y = value(k, b);
        if (x === y) return a - b;
        if (x === null || x === '' || x === undefined) return 1;
        if (y === null || y === '' || y === undefined) return -1;
        return (x < y ? -1 : 1) * d;
      });
    }
    function header(table, sortable) {
      var tr = el('tr');
      COLUMNS.forEach(function (c) {
        var th = el('th', c[0]);
        if (sortable) th.addEventListener('click', function () {
          state.sortDir = state.sortKey === c[1] ? -state.sortDir : (c[1] === 'name' || c[1] === 'rank' ? 1 : -1);
          state.sortKey = c[1]; sortRows(); state.page = 0; drawTable();
        });
        tr.appendChild(th);
      });
      table.querySelector('thead').appendChild(tr);
    }
    function fill(tbody, rows) {
      tbody.textContent = '';
      rows.forEach(function (i) {
        var tr = el('tr'); tr.dataset.kernel = String(i);
        COLUMNS.forEach(function (c) {
          var text = cell(c[1], i), td = el('td', text, c[1] === 'name' ? 'name' : c[1] === 'note' ? 'notes' : (/^(time|flop|achieved|pct|rank|int_)/.test(c[1]) ? 'num' : ''));
          if (CUT[c[1]] && text.length > CUT[c[1]]) { td.textContent = text.slice(0, CUT[c[1]] - 1) + '…'; td.title = text; }
          tr.appendChild(td);
        });
        tr.addEventListener('click', function () { showDetails(i); });
        tbody.appendChild(tr);
      });
    }
    function topRows() { return state.filtered.slice().sort(function (a, b) { return a - b; }).slice(0, M.top); }
    function pageRows() { return state.filtered.slice(state.page * PAGE, (state.page + 1) * PAGE); }
    function drawTop() {  // the longest kernels that pass the filters (K is longest first)
      fill(document.querySelector('#top-table tbody'), topRows());
      drawNotes(topRows().concat(pageRows()));
    }
    function drawTable() {
      var pages = Math.max(1, Math.ceil(state.filtered.length / PAGE));
      if (state.page >= pages) state.page = pages - 1;
      fill(document.querySelector('#stats-table tbody'), pageRows());
      document.getElementById('page').textContent = 'page ' + (state.page + 1) + ' of ' + pages;
      drawNotes(topRows().concat(pageRows()));
    }
    function drawPeaks() {
      var tb = document.querySelector('#peaks-table tbody'), want = deviceName(state.device);
      tb.textContent = '';
      D.peaks.forEach(function (p) {
        if (p.device !== want) return;
        var tr = el('tr');
        [p.device, p.roof, si(p.value, p.kind === 'compute' ? 'FLOP/s' : 'B/s'), p.basis, p.source].forEach(function (v) { tr.appendChild(el('td', v)); });
        tb.appendChild(tr);
      });
    }

    // ---- start ---------------------------------------------------------------------------------
    var anyDrawn = false; for (var i = 0; i < N; i++) if (drawn(i)) { anyDrawn = true; break; }
    if (!anyDrawn) document.getElementById('empty').hidden = false;
    mark('start'); setupFilters(); levelBoxes(); drawHeadline(); drawPeaks(); drawCollect(); drawFindings(); mark('filters+peaks');
    header(document.getElementById('stats-table'), true);
    header(document.getElementById('top-table'), false);
    function drawSteps() { state.steps = window.rooflineSteps ? window.rooflineSteps(D, state.device, esc, si) : 0; }  // timeseries.js
    drawSteps();
    state.comm = window.rooflineComm ? window.rooflineComm(D, esc, si) : 0;  // comm.js: the collectives' section
    applyFilters();
    mark('kernels');
    var gd = document.getElementById('kernel-chart');
    gd.on('plotly_hover', function (ev) { var p = ev.points[0]; if (p && p.customdata !== undefined) showDetails(p.customdata); });
    gd.on('plotly_afterplot', drawCanvas);  // after every draw, zoom, pan and resize
    gd.addEventListener('mousemove', canvasHover);
    gd.addEventListener('mouseleave', function () { if (TIP) TIP.hidden = true; });
    gd.on('plotly_click', function (ev) { var p = ev.points[0]; if (p && p.customdata !== undefined) showDetails(p.customdata); });
    document.getElementById('prev').addEventListener('click', function () { if (state.page > 0) { state.page--; drawTable(); } });
    document.getElementById('next').addEventListener('click', function () { state.page++; drawTable(); });
    // the programs chart sits below the tables, out of the first view: drawn once the first frame is shown
    // (it cost 0.7 s before the first view on 100,000 kernels: plotly's first chart on the page), then
    // rooflineReport.state.programs is true; a device change redraws it at once
    requestAnimationFrame(function () {
      mark('frame');
      setTimeout(function () { if (anyDrawn) drawPrograms(); mark('programs'); state.programs = true; }, 0);
    });
    window.rooflineReport = {canvasLayers: function () { return LAYERS; }, state: state, kernels: K, devices: DEVICES, marks: marks, applyFilters: applyFilters, showDetails: showDetails, ready: true};
  }
}());
