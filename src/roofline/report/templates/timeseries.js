/* The step chart of the HTML report: one roofline point per training step over the run (achieved
   FLOP/s on the left axis, achieved bandwidth per memory level on the right, intensity per level in
   the hover). report.js calls it with the decoded data, the device shown and its esc(): step labels
   and level names go to plotly entity-escaped, to the page with textContent only. Returns the number
   of steps drawn (0: the section stays hidden, fewer than two steps for this device). */
window.rooflineSteps = function (D, device, esc, si) {
  'use strict';
  var sec = document.getElementById('steps'), note = document.getElementById('steps-note');
  var M = D.meta, LEVELS = M.levels;
  var pts = (D.steps || []).filter(function (p) { return p.device === device; });
  if (pts.length < 2) { sec.hidden = true; return 0; }
  sec.hidden = false;
  var timed = pts.every(function (p) { return p.start_s !== null && p.start_s !== undefined; });
  note.textContent = pts.length + ' steps of ' + (device || 'unknown device') + '; x: the step number' +
    (timed ? ' (the hover gives when its first kernel started)' : '') + '. A step\'s rate is its kernels\' FLOPs ' +
    '(bytes) over their total time.';
  var hover = pts.map(function (p) {
    var s = esc(p.label) + '<br>' + p.kernels + ' kernel(s), ' + si(p.time, 's') + ' of kernel time' +
      (timed ? ', starts at ' + si(p.start_s, 's') : '') + '<br>' + si(p.achieved, 'FLOP/s') + ', ' + esc(p.bound);
    LEVELS.forEach(function (lv) {
      s += '<br>' + esc(M.level_labels[lv]) + ': ' + si(p['bw_' + lv], 'B/s') + ', ' +
        (p['int_' + lv] === null ? 'n/a' : Number(p['int_' + lv]).toPrecision(3)) + ' FLOP/B';
    });
    return s;
  });
  var x = pts.map(function (p) { return p.index; });
  var traces = [{type: 'scatter', mode: 'lines+markers', name: 'achieved FLOP/s', meta: 'step:flop', x: x,
    y: pts.map(function (p) { return p.achieved; }), text: hover, hovertemplate: '%{text}<extra></extra>',
    marker: {size: 9, color: '#111'}, line: {color: '#111'}}];
  var DASH = {dram: 'solid', l2: 'dash', l1: 'dot', lds: 'dashdot'},
      COLOUR = {dram: '#1f77b4', l2: '#2ca02c', l1: '#9467bd', lds: '#8c564b'};
  LEVELS.forEach(function (lv) {
    traces.push({type: 'scatter', mode: 'lines+markers', name: esc(M.level_labels[lv]) + ' bandwidth', meta: 'step:bw_' + lv,
      x: x, y: pts.map(function (p) { return p['bw_' + lv]; }), yaxis: 'y2', text: hover, hovertemplate: '%{text}<extra></extra>',
      marker: {size: 6, color: COLOUR[lv] || '#888'}, line: {dash: DASH[lv] || 'solid', color: COLOUR[lv] || '#888'}});
  });
  var L = {margin: {l: 70, r: 70, t: 20, b: 50}, hovermode: 'closest',
    xaxis: {title: {text: 'step'}, tickformat: 'd'},
    yaxis: {type: 'log', exponentformat: 'SI', title: {text: 'achieved FLOP/s'}},
    yaxis2: {type: 'log', exponentformat: 'SI', overlaying: 'y', side: 'right', title: {text: 'achieved bandwidth (B/s)'}},
    legend: {font: {size: 10}, orientation: 'h', y: -0.2}};
  Plotly.react('step-chart', traces, L, {responsive: true, displaylogo: false});
  return pts.length;
};
