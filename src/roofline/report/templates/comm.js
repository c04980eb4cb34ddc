/* The collectives' section of the HTML report: bus bandwidth against message size with the link roofs (the
   nccl-tests curve; each collective of the profile a point, hollow where only the algorithm bandwidth is known
   because the group size is unrecorded), and per rank and step the collectives' exposed vs overlapped time.
   report.js calls it with the decoded data and its esc()/si(): names go to plotly entity-escaped, to the page
   with textContent only. Returns the number of points drawn (the section stays hidden without collectives). */
window.rooflineComm = function (D, esc, si) {
  'use strict';
  var C = D.communication || {}, sec = document.getElementById('communication');
  var pts = C.points || [], rows = C.exposure || [];
  if (!pts.length && !rows.length) { sec.hidden = true; return 0; }
  sec.hidden = false;
  var COLOUR = {all_reduce: '#1f77b4', all_gather: '#2ca02c', reduce_scatter: '#d62728', all_to_all: '#9467bd',
    broadcast: '#8c564b', reduce: '#e377c2', send_recv: '#7f7f7f', gather: '#bcbd22', scatter: '#17becf'};
  var note = pts.length + ' collective(s) drawn';
  if (C.not_drawn) note += '; ' + C.not_drawn + ' not drawn (' + (C.not_drawn_reasons || []).map(function (r) {
    return r.rows + ': ' + r.reason; }).join('; ') + ')';
  document.getElementById('comm-note').textContent = note + '. Bus bandwidth = message size / GPU time × nccl-tests\' ' +
    'bus factor; NVLS and tree algorithms can pass a ring\'s roof.';
  var traces = [], colls = {};
  pts.forEach(function (p) { colls[p.collective] = true; });
  Object.keys(colls).sort().forEach(function (c) {
    [true, false].forEach(function (bus) {
      var mine = pts.filter(function (p) { return p.collective === c && (bus ? p.busbw !== null : p.busbw === null); });
      if (!mine.length) return;
      traces.push({type: 'scatter', mode: 'markers', name: esc(c) + (bus ? ' (busbw)' : ' (algbw: group size unrecorded)'),
        x: mine.map(function (p) { return p.bytes; }), y: mine.map(function (p) { return bus ? p.busbw : p.algbw; }),
        text: mine.map(function (p) {
          return esc(c) + ', ' + si(p.bytes, 'B') + ' in ' + si(p.time_s, 's') + '<br>busbw ' + si(p.busbw, 'B/s') +
            ', algbw ' + si(p.algbw, 'B/s') + (p.pct === null ? '' : ', ' + p.pct.toPrecision(3) + '% of the link roof') +
            '<br>n = ' + (p.n === null ? 'unrecorded' : p.n) + (p.rank === null ? '' : ', rank ' + p.rank) +
            (p.step ? ', ' + esc(p.step) : '') + (p.group ? '<br>group ' + esc(p.group) : '') +
            (p.placement ? '<br>' + esc(p.placement) : '');
        }), hovertemplate: '%{text}<extra></extra>',
        marker: {size: 8, color: bus ? (COLOUR[c] || '#333') : 'rgba(0,0,0,0)', line: {width: 1.5, color: COLOUR[c] || '#333'}}});
    });
  });
  var xs = pts.map(function (p) { return p.bytes; }), lo = Math.min.apply(null, xs) / 2, hi = Math.max.apply(null, xs) * 2;
  (C.roofs || []).forEach(function (r) {
    traces.push({type: 'scatter', mode: 'lines', name: esc(r.placement) + ' roof ' + si(r.value, 'B/s'), x: [lo, hi],
      y: [r.value, r.value], hovertemplate: esc(r.source) + '<extra></extra>',
      line: {color: '#000', dash: r.placement === 'intra-node' ? 'solid' : 'dash'}});
  });
  if (pts.length) {
    Plotly.react('comm-chart', traces, {margin: {l: 70, r: 20, t: 20, b: 50}, hovermode: 'closest',
      xaxis: {type: 'log', exponentformat: 'SI', title: {text: 'message size (bytes)'}},
      yaxis: {type: 'log', exponentformat: 'SI', title: {text: 'bus bandwidth (B/s, one direction)'}},
      legend: {font: {size: 10}}}, {responsive: true, displaylogo: false});
  } else { document.getElementById('comm-chart').hidden = true; }
  var body = document.querySelector('#comm-table tbody');
  body.textContent = '';
  rows.forEach(function (r) {
    var tr = document.createElement('tr');
    [r.rank === null ? '' : r.rank, r.step, si(r.exposed_s + r.overlapped_s, 's'), si(r.exposed_s, 's'),
     si(r.overlapped_s, 's'), r.gpu_time_s > 0 ? (100 * r.exposed_s / r.gpu_time_s).toPrecision(3) + '%' : 'n/a'
    ].forEach(function (v) { var td = document.createElement('td'); td.textContent = String(v); tr.appendChild(td); });
    body.appendChild(tr);
  });
  return pts.length;
};
