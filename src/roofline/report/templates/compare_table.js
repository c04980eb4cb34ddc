// The diff pages' table: click a header to sort (again: reverse; unavailable values last), a text filter, pages.
// rooflineTable({cols: [[header, key, kind]], rows: {key: [values]}, fmt: {kind: value -> text}, filter: [keys],
//                page: 50}) draws into #diff-table, #filter, #prev, #next, #page (the filter and pager optional).
function rooflineTable(o) {
  'use strict';
  var cols = o.cols, R = o.rows, PAGE = o.page || 50, page = 0, sortCol = -1, sortDir = 1;
  var n = R[cols[0][1]].length, all = [], order = [];
  for (var i = 0; i < n; i++) all.push(i);
  function $(id) { return document.getElementById(id); }
  var tr = document.createElement('tr');
  cols.forEach(function (c, ci) {
    var th = document.createElement('th');
    th.textContent = c[0];
    th.addEventListener('click', function () { sortDir = sortCol === ci ? -sortDir : (c[2] === 'text' ? 1 : -1); sortCol = ci; apply(); });
    tr.appendChild(th);
  });
  document.querySelector('#diff-table thead').appendChild(tr);
  function cmp(a, b) {
    var c = cols[sortCol], va = R[c[1]][a], vb = R[c[1]][b];
    var na = va === null || va === undefined, nb = vb === null || vb === undefined;
    if (na || nb) return na === nb ? a - b : (na ? 1 : -1);
    if (c[2] === 'text') return sortDir * String(va).localeCompare(String(vb)) || a - b;
    return sortDir * (va - vb) || a - b;
  }
  function apply() {
    var q = $('filter') ? $('filter').value.toLowerCase() : '';
    order = all.filter(function (i) {
      return !q || (o.filter || []).map(function (k) { return R[k][i]; }).join(' ').toLowerCase().indexOf(q) >= 0;
    });
    if (sortCol >= 0) order.sort(cmp);
    document.querySelectorAll('#diff-table th').forEach(function (th, ci) {
      th.className = ci === sortCol ? (sortDir > 0 ? 'sorted-asc' : 'sorted-desc') : '';
    });
    page = Math.min(page, Math.max(0, Math.ceil(order.length / PAGE) - 1));
    draw();
  }
  function draw() {
    var tb = document.querySelector('#diff-table tbody');
    tb.textContent = '';
    order.slice(page * PAGE, page * PAGE + PAGE).forEach(function (i) {
      var row = document.createElement('tr');
      cols.forEach(function (c) {
        var td = document.createElement('td');
        td.textContent = o.fmt[c[2]](R[c[1]][i]);
        td.className = c[2] === 'text' ? (c[1] === 'identity' || c[1] === 'kernel' ? 'name' : '') : 'num';
        row.appendChild(td);
      });
      tb.appendChild(row);
    });
    var pages = Math.max(1, Math.ceil(order.length / PAGE));
    if ($('page')) $('page').textContent = 'page ' + (page + 1) + ' of ' + pages + ' (' + order.length + ' rows)';
    if ($('prev')) $('prev').disabled = page === 0;
    if ($('next')) $('next').disabled = page >= pages - 1;
  }
  if ($('prev')) $('prev').addEventListener('click', function () { page = Math.max(0, page - 1); draw(); });
  if ($('next')) $('next').addEventListener('click', function () { page += 1; draw(); });
  if ($('filter')) $('filter').addEventListener('input', function () { page = 0; apply(); });
  apply();
}
