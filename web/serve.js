// footprint serve: the web UI (docs/serve.md). Browses experiments -> workloads -> groups of
// repetitions -> runs through the JSON API (the tree is asked again every 2 s, so new runs
// appear and ended runs change state), keeps the selection and the filters in the URL's hash (so
// a view reloads and can be shared), draws the selected runs with the same charts as footprint
// plot (web/charts.js), compares the selected groups and runs as footprint compare does, and
// updates running runs in place every second. Above all, the runs table (sorted, filtered and
// paged by the server), and the header of the selected run or the param diff of the selected
// runs. Every string from the database goes into the page as text (textContent), never as HTML.
//
// For tests: window.footprintServe holds {ready, view, selected(), compared(), describe(),
// unfold(), counts}, where counts tells how many plot, series, tree, table and live-refresh
// requests were made.
(function () {
  'use strict';

  const fc = window.FootprintCharts;
  const format = fc.format;
  const $ = function (id) { return document.getElementById(id); };
  const LIVE_PERIOD_MS = 1000;
  const POINTS = 2000;
  const MAX_RUNS = 64;
  const TREE_PERIOD_MS = 2000;

  const state = {
    runs: [],        // selected run ids, in selection order
    groups: [],      // selected group ids (their measured runs, compared as one set each)
    workloads: [],   // selected [experiment, workload] pairs
    filters: {q: '', status: '', tag: '', from: '', to: ''},
    // cols: param:KEY, tag:KEY; per: runs a page
    table: {sort: 'started', order: 'desc', page: 0, cols: [], per: 25},
  };
  let view = null;        // the charts of the current selection
  let generation = 0;     // bumps on each redraw; stale responses are dropped
  let liveTimer = null;
  const app = window.footprintServe = {
    ready: false, view: null, counts: {plot: 0, series: 0, tree: 0, table: 0, refresh: 0},
    selected: function () { return currentIds; },
    compared: function () { return currentSets; },
    describe: function () { return view ? view.describe() : []; },
    unfold: function () { if (view) view.unfold(); },
  };
  let currentIds = [];
  let currentSets = [];  // the sets= of the comparison shown

  // ---- the API ------------------------------------------------------------------------
  function api(path, params) {
    const query = new URLSearchParams();
    Object.keys(params || {}).forEach(function (k) {
      const v = params[k];
      // An empty value is a value: experiment= means the runs without an experiment.
      if (v !== null && v !== undefined) query.set(k, v);
    });
    const qs = query.toString();
    return fetch('/api/' + path + (qs ? '?' + qs : ''), {credentials: 'same-origin'})
        .then(function (res) {
          return res.json().then(function (body) {
            if (!res.ok) throw new Error(body.error || ('HTTP ' + res.status));
            return body;
          });
        });
  }

  function message(text) { $('fp-message').textContent = text || ''; }

  function el(tag, text, className) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = text;
    if (className) e.className = className;
    return e;
  }

  // ---- the URL ------------------------------------------------------------------------
  function readHash() {
    const p = new URLSearchParams(location.hash.slice(1));
    state.runs = p.getAll('run');
    state.groups = p.getAll('group');
    state.workloads = p.getAll('workload').map(function (w) {
      try {
        const pair = JSON.parse(w);
        return Array.isArray(pair) && pair.length === 2 ? pair.map(String) : null;
      } catch (e) {
        return null;
      }
    }).filter(Boolean);
    Object.keys(state.filters).forEach(function (k) { state.filters[k] = p.get(k) || ''; });
    state.table.sort = p.get('sort') || 'started';
    state.table.order = p.get('order') === 'asc' ? 'asc' : 'desc';
    state.table.page = Math.max(0, parseInt(p.get('page'), 10) || 0);
    state.table.cols = p.getAll('col');
    state.table.per = Math.min(1000, Math.max(1, parseInt(p.get('per'), 10) || 25));
  }
  function writeHash() {
    const p = new URLSearchParams();
    Object.keys(state.filters).forEach(function (k) {
      if (state.filters[k]) p.set(k, state.filters[k]);
    });
    if (state.table.sort !== 'started' || state.table.order !== 'desc') {
      p.set('sort', state.table.sort);
      p.set('order', state.table.order);
    }
    if (state.table.per !== 25) p.set('per', state.table.per);
    if (state.table.page) p.set('page', state.table.page);
    state.table.cols.forEach(function (c) { p.append('col', c); });
    state.workloads.forEach(function (w) { p.append('workload', JSON.stringify(w)); });
    state.groups.forEach(function (id) { p.append('group', id); });
    state.runs.forEach(function (id) { p.append('run', id); });
    const hash = '#' + p.toString();
    if (location.hash !== hash) history.replaceState(null, '', location.pathname + hash);
  }

  // ---- browsing -----------------------------------------------------------------------
  // The filters that are set (an empty one is left out: it would mean "empty").
  function filterParams() {
    const out = {};
    Object.keys(state.filters).forEach(function (k) {
      if (state.filters[k]) out[k] = state.filters[k];
    });
    return out;
  }
  function sameWorkload(a, b) { return a[0] === b[0] && a[1] === b[1]; }
  function workloadSelected(e, w) {
    return state.workloads.some(function (x) { return sameWorkload(x, [e, w]); });
  }
  function toggle(list, item, on) {
    const rest = list.filter(function (x) { return x !== item; });
    if (on) rest.push(item);
    return rest;
  }

  // Which folds of the tree are open, kept across its refreshes: experiments start open,
  // groups closed unless one of their runs is selected.
  const folds = {};
  function fold(key, openByDefault, summary) {
    const details = el('details');
    details.open = key in folds ? folds[key] : openByDefault;
    details.addEventListener('toggle', function () { folds[key] = details.open; });
    details.appendChild(summary);
    return details;
  }

  function checkbox(className, checked, onChange) {
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.className = className;
    box.checked = checked;
    box.addEventListener('change', function () { onChange(box.checked); });
    return box;
  }

  function runItem(r) {
    const li = el('li');
    li.dataset.run = r.id;
    li.dataset.status = r.status;
    const rl = el('label');
    const check = checkbox('fp-run-check', state.runs.indexOf(r.id) >= 0, function (on) {
      state.runs = toggle(state.runs, r.id, on);
      selectionChanged();
    });
    check.value = r.id;
    rl.appendChild(check);
    const what = r.repetition > 0 ? '#' + r.repetition
        : r.repetition < 0 ? 'warm-up ' + -r.repetition : (r.name || r.id.slice(0, 8));
    rl.appendChild(el('span', what, 'fp-run-name' + (r.repetition < 0 ? ' fp-warmup' : '')));
    rl.appendChild(el('span', ' ' + r.id.slice(0, 8) + ' · ' + fc.statusText(r) + ' · ' +
                      format('s', r.duration_s), 'fp-run-meta'));
    rl.title = r.id + ' started ' + new Date(r.started_at_ns / 1e6).toISOString() +
        (r.repetition < 0 ? ' (a warm-up: never in statistics)' : '');
    li.appendChild(rl);
    return li;
  }

  // The runs of one `run -r` group: a fold whose box selects the group as one set (its
  // measured repetitions; warm-ups are listed, labelled, and left out).
  function groupItem(id, runs) {
    const measured = runs.filter(function (r) { return r.repetition > 0; });
    const warmups = runs.length - measured.length;
    const summary = el('summary', null, 'fp-group-name');
    const label = el('label');
    const box = checkbox('fp-group-check', state.groups.indexOf(id) >= 0, function (on) {
      state.groups = toggle(state.groups, id, on);
      selectionChanged();
    });
    box.value = id;
    label.appendChild(box);
    label.appendChild(el('span', runs[0].name || id.slice(0, 8)));
    label.appendChild(el('span', ' group ' + id.slice(0, 8) + ' · ' + measured.length + ' runs' +
                         (warmups ? ' + ' + warmups + ' warm-up' + (warmups > 1 ? 's' : '') : '') +
                         (runs.some(function (r) { return r.status === 'running'; })
                             ? ' · running' : ''), 'fp-run-meta'));
    label.title = 'group ' + id + ': tick to compare its ' + measured.length +
        ' repetitions as one set (mean, spread, p-values)';
    summary.appendChild(label);
    const anySelected = runs.some(function (r) { return state.runs.indexOf(r.id) >= 0; });
    const details = fold('group:' + id, anySelected, summary);
    details.className = 'fp-group';
    details.dataset.group = id;
    const list = el('ul', null, 'fp-run-list');
    runs.slice().sort(function (a, b) { return a.repetition - b.repetition; })
        .forEach(function (r) { list.appendChild(runItem(r)); });
    details.appendChild(list);
    return details;
  }

  // A workload's runs, newest first; the runs of a group together, where its newest run is.
  function workloadItems(runs) {
    const items = [];
    const groups = {};
    runs.forEach(function (r) {
      if (!r.group_id) { items.push({run: r}); return; }
      if (!groups[r.group_id]) items.push(groups[r.group_id] = {group: r.group_id, runs: []});
      groups[r.group_id].runs.push(r);
    });
    return items;
  }

  function workloadBox(exp, wl) {
    const group = el('div', null, 'fp-wl');
    const label = el('label', null, 'fp-wl-name');
    const box = checkbox('fp-wl-check', workloadSelected(exp.name, wl.name), function (on) {
      const pair = [exp.name, wl.name];
      state.workloads = state.workloads.filter(function (x) { return !sameWorkload(x, pair); });
      if (on) state.workloads.push(pair);
      selectionChanged();
    });
    box.dataset.experiment = exp.name;
    box.dataset.workload = wl.name;
    label.appendChild(box);
    label.appendChild(el('span', wl.name || '(no workload)'));
    label.appendChild(el('span', ' ' + wl.runs.length, 'fp-count'));
    group.appendChild(label);
    const list = el('ul', null, 'fp-run-list');
    workloadItems(wl.runs).forEach(function (item) {
      if (item.run) { list.appendChild(runItem(item.run)); return; }
      const li = el('li', null, 'fp-group-item');
      li.appendChild(groupItem(item.group, item.runs));
      list.appendChild(li);
    });
    group.appendChild(list);
    return group;
  }

  // The tree is drawn again when what the server lists changed (new runs, a run that ended),
  // keeping the folds as they were and the list where it was scrolled. Its boxes follow the
  // clicks themselves; a URL with another selection draws it anew (lastTree = null).
  let lastTree = null;
  function showTree(tree) {
    const text = JSON.stringify(tree);
    if (text === lastTree) return;
    lastTree = text;
    const box = $('fp-tree');
    box.textContent = '';
    $('fp-count').textContent = tree.total + ' run' + (tree.total === 1 ? '' : 's') +
        (tree.truncated ? ' (the newest ' + tree.listed + ' listed; narrow the search)' : '');
    tree.experiments.forEach(function (exp) {
      const count = exp.workloads.reduce(function (n, w) { return n + w.runs.length; }, 0);
      const summary = el('summary');
      summary.appendChild(el('span', exp.name || '(no experiment)', 'fp-exp-name'));
      summary.appendChild(el('span', ' ' + count, 'fp-count'));
      const details = fold('exp:' + exp.name, true, summary);
      details.className = 'fp-exp';
      exp.workloads.forEach(function (wl) { details.appendChild(workloadBox(exp, wl)); });
      box.appendChild(details);
    });
  }

  let treeTimer = null;
  let treeGeneration = 0;  // as generation: only the newest answer is shown and re-armed
  function loadTree() {
    const mine = ++treeGeneration;
    app.counts.tree++;
    clearTimeout(treeTimer);
    return Promise.all([api('tree', filterParams()), loadTable()])
        .then(function (got) { if (mine === treeGeneration) showTree(got[0]); })
        .catch(function (e) { message('Cannot list the runs: ' + e.message); })
        .then(function () {
          if (mine === treeGeneration) treeTimer = setTimeout(refreshTree, TREE_PERIOD_MS);
        });
  }
  // Every TREE_PERIOD_MS while the page is visible.
  function refreshTree() {
    if (document.hidden) { treeTimer = setTimeout(refreshTree, TREE_PERIOD_MS); return; }
    loadTree();
  }

  // ---- the runs table (the landing view) ----------------------------------------------
  // Sorted, filtered and paged on the server (/api/runs); its state lives in the URL. A row's
  // box selects the run, as the tree's does.
  const fixedColumns = [
    {key: 'status', label: 'status'}, {key: 'name', label: 'name'},
    {key: 'started', label: 'started (UTC)'}, {key: 'duration', label: 'duration'},
    {key: 'cpu', label: 'CPU', figure: 'cpu_s', unit: 's'},
    {key: 'memory', label: 'peak memory', figure: 'peak_memory_bytes', unit: 'bytes'},
    {key: 'energy', label: 'energy', figure: 'energy_j', unit: 'J'},
    {key: 'gpu', label: 'GPU time', figure: 'gpu_time_s', unit: 's'},
  ];
  function statusBadge(status, text) {
    const badge = el('span', text || status, 'fp-status fp-status-' + status +
                     (status === 'running' ? ' fp-live' : ''));
    badge.title = status === 'running' ? 'running: updated live' : status;
    return badge;
  }
  function cellText(r, c) {
    if (c.key === 'name') return r.name || r.id.slice(0, 8);
    if (c.key === 'started') return new Date(r.started_at_ns / 1e6).toISOString().replace('T', ' ').slice(0, 19);
    if (c.key === 'duration') return format('s', r.duration_s);
    if (c.figure) return format(c.unit, r.figures[c.figure]);
    const map = c.key.startsWith('param:') ? r.params : r.tags;
    const v = map[c.key.slice(c.key.indexOf(':') + 1)];
    return v === undefined ? '' : String(v);
  }
  function tableHead(columns) {
    const head = el('tr');
    head.appendChild(el('th', ''));
    columns.forEach(function (c) {
      const th = el('th', c.label);
      th.dataset.sort = c.key;
      if (state.table.sort === c.key) th.dataset.sorted = state.table.order;
      th.title = 'sort by ' + c.label;
      th.addEventListener('click', function () {
        const same = state.table.sort === c.key;
        state.table.order = same && state.table.order === 'desc' ? 'asc' : 'desc';
        state.table.sort = c.key;
        state.table.page = 0;
        writeHash();
        loadTable();
      });
      head.appendChild(th);
    });
    return head;
  }
  function tableRow(r, columns) {
    const tr = el('tr');
    tr.dataset.run = r.id;
    tr.dataset.status = r.status;
    if (state.runs.indexOf(r.id) >= 0) tr.className = 'fp-picked';
    const box = checkbox('fp-table-check', state.runs.indexOf(r.id) >= 0, function (on) {
      state.runs = toggle(state.runs, r.id, on);
      selectionChanged();
    });
    box.value = r.id;
    tr.appendChild(el('td')).appendChild(box);
    columns.forEach(function (c) {
      const td = el('td');
      if (c.key === 'status') td.appendChild(statusBadge(r.status, fc.statusText(r)));
      else td.textContent = cellText(r, c);
      if (c.figure || c.key === 'duration') td.className = 'fp-num';
      td.title = c.key === 'name' ? r.id + (r.description ? ': ' + r.description : '') : td.textContent;
      tr.appendChild(td);
    });
    return tr;
  }
  function columnPicker(page) {
    const list = $('fp-column-list');
    const keys = page.param_keys.map(function (k) { return 'param:' + k; })
        .concat(page.tag_keys.map(function (k) { return 'tag:' + k; }));
    state.table.cols.forEach(function (c) { if (keys.indexOf(c) < 0) keys.push(c); });
    list.textContent = keys.length ? '' : 'no params or tags on this page';
    keys.forEach(function (key) {
      const label = el('label');
      label.appendChild(checkbox('fp-col-check', state.table.cols.indexOf(key) >= 0, function (on) {
        state.table.cols = toggle(state.table.cols, key, on);
        writeHash();
        loadTable();
      })).value = key;
      label.appendChild(document.createTextNode(key));
      list.appendChild(label);
    });
  }
  let lastTable = null;
  function showTable(page) {
    const text = JSON.stringify([page, state.runs, state.table.cols]);
    if (text === lastTable) return;
    lastTable = text;
    const columns = fixedColumns.concat(state.table.cols.map(function (key) {
      return {key: key, label: key.replace(/^param:/, '')};
    }));
    const table = $('fp-table');
    table.textContent = '';
    table.appendChild(tableHead(columns));
    page.runs.forEach(function (r) { table.appendChild(tableRow(r, columns)); });
    const last = Math.max(0, Math.ceil(page.total / state.table.per) - 1);
    $('fp-table-count').textContent = page.total + ' run' + (page.total === 1 ? '' : 's') +
        (page.total ? ' · ' + (page.offset + 1) + '–' + (page.offset + page.runs.length) : '');
    $('fp-page').textContent = 'page ' + (state.table.page + 1) + ' of ' + (last + 1);
    $('fp-prev').disabled = state.table.page === 0;
    $('fp-next').disabled = state.table.page >= last;
    columnPicker(page);
  }
  let tableGeneration = 0;
  function loadTable() {
    const mine = ++tableGeneration;
    app.counts.table++;
    const params = Object.assign(filterParams(), {
      sort: state.table.sort, order: state.table.order, limit: state.table.per,
      offset: state.table.page * state.table.per});
    return api('runs', params).then(function (page) {
      if (mine === tableGeneration) showTable(page);
    }).catch(function (e) { message('Cannot list the runs: ' + e.message); });
  }
  function turnPage(step) {
    state.table.page = Math.max(0, state.table.page + step);
    writeHash();
    loadTable();
  }

  // What the plot draws: the selected groups (their measured runs), the single runs, then the
  // runs of the selected workloads (newest first).
  function resolveSelection() {
    const jobs = state.workloads.map(function (w) {
      return api('runs', {experiment: w[0], workload: w[1], limit: MAX_RUNS}).then(function (page) {
        return page.runs.map(function (r) { return r.id; });
      });
    });
    return Promise.all(jobs).then(function (lists) {
      const specs = state.groups.map(function (g) { return 'group:' + g; });
      state.runs.concat.apply(state.runs.slice(), lists).forEach(function (id) {
        if (specs.indexOf(id) < 0) specs.push(id);
      });
      return specs;
    });
  }

  // The sets compared: each selected group; the runs picked from one group (its repetitions)
  // as one set RUN+RUN; every other run alone. Short ids keep the verdicts readable.
  function compareSets(runs) {
    const sets = [];
    const buckets = {};
    state.groups.forEach(function (g) {
      if (runs.some(function (r) { return r.group_id === g; })) sets.push('group:' + g.slice(0, 8));
    });
    runs.forEach(function (r) {
      if (r.repetition > 0 && state.groups.indexOf(r.group_id) >= 0) return;  // in its group
      const key = r.repetition > 0 ? 'g' + r.group_id : 'r' + r.id;
      if (!buckets[key]) sets.push(buckets[key] = []);
      buckets[key].push(r.id.slice(0, 8));
    });
    return sets.map(function (s) { return Array.isArray(s) ? s.join('+') : s; });
  }

  // ---- the selection ------------------------------------------------------------------
  function stopLive() {
    if (liveTimer) clearTimeout(liveTimer);
    liveTimer = null;
  }

  // Redraws the charts, and the tree and table whose boxes show the selection.
  function selectionChanged() {
    writeHash();
    lastTree = null;
    loadTree();
    draw();
  }



  function exportButtons(ids, data) {
    const nav = $('fp-actions');
    nav.textContent = '';
    if (!ids.length) return;
    const jsonButton = el('button', 'JSON of the view');
    jsonButton.title = 'the data drawn here (downsampled series, scopes, values, totals)';
    jsonButton.addEventListener('click', function () {
      fc.download('footprint-view.json', 'application/json', JSON.stringify(data, null, 1));
    });
    const csvButton = el('button', 'CSV of the view');
    csvButton.title = 'the points drawn here';
    csvButton.addEventListener('click', function () {
      fc.download('footprint-view.csv', 'text/csv', view.metricsCsv(data.metrics));
    });
    nav.appendChild(jsonButton);
    nav.appendChild(csvButton);
    ['csv', 'json'].forEach(function (kind) {
      const a = el('a', 'all samples (' + kind.toUpperCase() + ')', 'fp-button');
      a.href = '/api/export?' + new URLSearchParams({runs: ids.join(','), format: kind});
      a.download = 'footprint-export.' + kind;
      a.title = 'footprint export: every sample of the selected runs, full resolution';
      nav.appendChild(a);
    });
  }

  // ---- a run's header, the param diff, warnings -----------------------------------------
  function compact(v) { return typeof v === 'string' ? v : JSON.stringify(v); }
  function keyValues(map) {
    return Object.keys(map || {}).map(function (k) { return k + '=' + compact(map[k]); }).join('  ');
  }
  // meta entries the header names itself, or that only footprint's own workings need.
  const shownMeta = ['tags', 'params', 'hardware', 'footprint_version', 'git', 'intervals_ns',
                     'monitor', 'sources', 'accounting', 'memory_peaks', 'tree_membership'];
  function headerRows(doc) {
    const r = doc.run;
    const meta = doc.meta || {};
    const hw = meta.hardware || {};
    const totals = doc.totals || {};
    const rows = [
      ['command', r.command.join(' ')], ['working folder', r.cwd],
      ['status', r.status + (r.exit_code !== null ? ', exit ' + r.exit_code : '')],
      ['started (UTC)', new Date(r.started_at_ns / 1e6).toISOString()],
      ['duration', format('s', r.duration_s)],
      ['host', r.host + (r.user ? ' (user ' + r.user + ')' : '')],
      ['git', meta.git ? keyValues(meta.git) : 'not recorded'],
      ['environment', [hw.os, hw.kernel, hw.cpu_model && hw.cpu_model + ' × ' + hw.logical_cpus,
                       hw.memory_bytes && format('bytes', hw.memory_bytes) + ' memory', hw.arch]
          .filter(Boolean).join(' · ')],
      ['versions', 'footprint ' + (meta.footprint_version || '?')],
      ['tags', keyValues(r.tags) || 'none'], ['params', keyValues(r.params) || 'none'],
      ['description', r.description || 'none'],
      ["footprint's own cost", format('s', totals.monitor_cpu_s) + ' CPU, ' +
          format('bytes', totals.monitor_peak_rss_bytes) + ' peak memory (not your program\'s)'],
    ];
    if (r.experiment || r.workload) rows.splice(1, 0, ['experiment', (r.experiment || '') + ' › ' + (r.workload || '')]);
    if (r.group_id) rows.splice(1, 0, ['group', r.group_id + ' #' + r.repetition]);
    Object.keys(meta).forEach(function (k) {
      if (shownMeta.indexOf(k) < 0) rows.push([k, compact(meta[k])]);
    });
    return rows;
  }
  function showRunHeader(doc) {
    const box = $('fp-header');
    box.textContent = '';
    const title = el('h2');
    title.appendChild(statusBadge(doc.run.status));
    title.appendChild(document.createTextNode(' ' + (doc.run.name || doc.run.id) + ' · ' + doc.run.id));
    box.appendChild(title);
    const dl = el('dl');
    dl.id = 'fp-run-header';
    headerRows(doc).forEach(function (row) {
      dl.appendChild(el('dt', row[0]));
      dl.appendChild(el('dd', row[1]));
    });
    if ((doc.artifacts || []).length) {
      dl.appendChild(el('dt', 'artifacts'));
      dl.appendChild(artifactLinks(doc));
    }
    box.appendChild(dl);
  }
  // The run's stored files (profiler traces among them), each a download of the file as the
  // run recorded it: the link names the artifact, never a path.
  function artifactLinks(doc) {
    const dd = el('dd');
    dd.id = 'fp-artifacts';
    doc.artifacts.forEach(function (a, i) {
      if (i) dd.appendChild(document.createTextNode(' · '));
      const link = el('a', a.name, 'fp-artifact');
      link.href = '/api/runs/' + encodeURIComponent(doc.run.id) + '/artifacts/' +
          encodeURIComponent(a.name);
      link.download = '';
      link.title = 'SHA-256 ' + a.sha256;
      dd.appendChild(link);
      dd.appendChild(document.createTextNode(' (' + format('bytes', a.size) + ')'));
    });
    return dd;
  }
  // The params of the selected runs side by side, the ones that differ marked.
  function showParamDiff(docs) {
    const box = $('fp-header');
    box.textContent = '';
    const keys = [];
    docs.forEach(function (d) {
      Object.keys(d.run.params || {}).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); });
    });
    if (!keys.length) return;
    box.appendChild(el('h2', 'Params of the selected runs (differences marked)'));
    const scroll = el('div', null, 'fp-scroll');
    const table = el('table', null, 'fp-table fp-diff');
    const head = el('tr');
    head.appendChild(el('th', 'param'));
    docs.forEach(function (d) { head.appendChild(el('th', d.run.name || d.run.id.slice(0, 8))); });
    table.appendChild(head);
    keys.sort().forEach(function (k) {
      const values = docs.map(function (d) {
        const v = (d.run.params || {})[k];
        return v === undefined ? '—' : compact(v);
      });
      const differs = values.some(function (v) { return v !== values[0]; });
      const tr = el('tr');
      tr.dataset.param = k;
      tr.dataset.differs = differs;
      tr.appendChild(el('td', k));
      values.forEach(function (v) { tr.appendChild(el('td', v, differs ? 'fp-differs' : '')); });
      table.appendChild(tr);
    });
    scroll.appendChild(table);
    box.appendChild(scroll);
  }
  const MAX_DIFF_RUNS = 16;
  function showHeader(ids, mine) {
    $('fp-header').textContent = '';
    if (!ids.length) return Promise.resolve();
    return Promise.all(ids.slice(0, MAX_DIFF_RUNS).map(function (id) { return api('runs/' + id); }))
        .then(function (docs) {
          if (mine !== generation) return;
          if (docs.length === 1) showRunHeader(docs[0]);
          else showParamDiff(docs);
        });
  }
  // Comparing runs that stopped early with runs that ended well reads as a faster program.
  function warnMixed(runs) {
    const box = $('fp-warning');
    const ended = runs.filter(function (r) { return r.status !== 'running'; });
    const bad = ended.filter(function (r) { return r.status !== 'ok'; });
    box.hidden = !(bad.length && bad.length < ended.length);
    if (box.hidden) return;
    const kinds = Array.from(new Set(bad.map(function (r) { return r.status; }))).join('/');
    box.textContent = 'Careful: ' + bad.length + ' ' + kinds + ' run' + (bad.length > 1 ? 's' : '') +
        ' (' + bad.map(function (r) { return r.label; }).join(', ') + ') compared with ' +
        (ended.length - bad.length) + ' ok: a run that stopped early (or a failed first attempt ' +
        'that a resumed run finished) is not a faster program. Untick them, or filter status:ok.';
  }

  function percent(v) {
    if (v === null || v === undefined) return '-';
    return (v >= 0 ? '+' : '') + (v * 100).toFixed(1) + ' %';
  }

  // The verdicts of the headline figures ("'group:3f2a1b2c' ran 1.33 ± 0.04 times faster than
  // ..."), each set's spec replaced by its label.
  function verdictList(c) {
    const list = el('ul', null, 'fp-verdicts');
    c.figures.forEach(function (f) {
      if (!f.headline) return;
      f.verdicts.forEach(function (v) {
        if (!v) return;
        c.sets.forEach(function (s) { v = v.split("'" + s.spec + "'").join(s.label); });
        list.appendChild(el('li', v));
      });
    });
    return list;
  }

  function compareTable(c) {
    const box = $('fp-compare');
    box.textContent = '';
    box.appendChild(el('h2', 'Comparison with ' + c.sets[0].label + ' (' +
                       (c.test === 'welch' ? "Welch's t-test" : c.test) + ', alpha ' + c.alpha +
                       '; a single run on a side: the plain ratio)'));
    box.appendChild(verdictList(c));
    const scroll = el('div', null, 'fp-compare-box');
    const table = el('table', null, 'fp-runs fp-compare');
    const head = el('tr');
    head.appendChild(el('th', 'figure'));
    c.sets.forEach(function (s, i) {
      const th = el('th', s.label + (s.n > 1 ? ' (n=' + s.n + ')' : ''));
      th.title = s.spec;
      head.appendChild(th);
      if (i > 0) head.appendChild(el('th', 'change'));
    });
    table.appendChild(head);
    c.figures.forEach(function (f) {
      const tr = el('tr');
      if (f.headline) tr.className = 'fp-headline';
      tr.appendChild(el('td', f.own ? f.label + " (footprint's own)" : f.label));
      if (f.own) tr.title = "footprint's own cost, not your program's: never a regression";
      f.sets.forEach(function (s, i) {
        tr.appendChild(el('td', s ? format(f.unit, s.mean) : '-'));
        if (i === 0) return;
        const ch = f.changes[i];
        const td = el('td', ch ? percent(ch.relative) +
                      (ch.p_value !== null && ch.p_value !== undefined
                          ? ' (p=' + ch.p_value.toPrecision(2) + ')' : '') : '-');
        if (ch && ch.significant) td.className = 'fp-significant';
        tr.appendChild(td);
      });
      table.appendChild(tr);
    });
    scroll.appendChild(table);
    box.appendChild(scroll);
  }

  function draw() {
    const mine = ++generation;
    stopLive();
    return resolveSelection().then(function (specs) {
      if (mine !== generation) return;
      currentIds = [];
      currentSets = [];
      const chartsBox = $('fp-charts');
      if (view) view.dispose();
      view = app.view = null;
      chartsBox.textContent = '';
      $('fp-selection').textContent = '';
      $('fp-compare').textContent = '';
      $('fp-header').textContent = '';
      $('fp-warning').hidden = true;
      exportButtons([], null);
      if (!specs.length) {
        message('Tick runs in the table, or runs, groups of repetitions or whole workloads on the left.');
        app.ready = true;
        return;
      }
      message('Loading…');
      app.counts.plot++;
      return api('plot', {runs: specs.join(','), points: POINTS}).then(function (data) {
        if (mine !== generation) return;
        message('');
        const ids = currentIds = data.runs.map(function (r) { return r.id; });
        const sets = currentSets = compareSets(data.runs);
        const compare = sets.length >= 2 ? api('compare', {sets: sets.join(',')}) : null;
        $('fp-selection').appendChild(fc.runsTable(data.runs));
        warnMixed(data.runs);
        const header = showHeader(ids, mine);
        exportButtons(ids, data);
        view = app.view = fc.createView(data, chartsBox);
        view.render();
        if (!view.charts.length) message('Nothing to draw: the selected runs have no samples, values or totals.');
        startLive(data, specs, mine);
        return Promise.all([header, compare && compare.then(function (c) {
          if (mine === generation) compareTable(c);
        }).catch(function (e) { $('fp-compare').textContent = 'No comparison: ' + e.message; })]);
      });
    }).catch(function (e) {
      if (mine === generation) message('Cannot show the selection: ' + e.message);
    }).then(function () {
      if (mine === generation) app.ready = true;
    });
  }

  // ---- live runs ----------------------------------------------------------------------
  // Each running run is asked every second for its samples after the last one drawn (the
  // earliest last sample of its series; appendLive drops what is drawn already), and every
  // other second the whole document is asked again and every panel updated in place: the
  // values, scopes, totals, the runs table's duration and status, the run's header. A run
  // that ends changes in place the same way, once more, and its live marker goes.
  const PANELS_EVERY = 2;  // polls between panel refreshes
  function refreshPanels(specs, mine) {
    app.counts.refresh++;
    return api('plot', {runs: specs.join(','), points: POINTS}).then(function (data) {
      if (mine !== generation) return;
      view.refresh(data);
      const selection = $('fp-selection');
      selection.textContent = '';
      selection.appendChild(fc.runsTable(data.runs));
      warnMixed(data.runs);
      return showHeader(currentIds, mine);
    });
  }
  function startLive(data, specs, mine) {
    const live = [];
    data.runs.forEach(function (r, i) {
      if (r.status !== 'running') return;
      let since = null;
      data.metrics.forEach(function (m) {
        m.series.forEach(function (s) {
          if (s.run === i && s.end_ns !== null && (since === null || s.end_ns < since)) since = s.end_ns;
        });
      });
      live.push({index: i, id: r.id, since: since});
    });
    if (!live.length) return;
    let polls = 0;
    function poll() {
      if (mine !== generation) return;
      Promise.all(live.map(function (l) {
        app.counts.series++;
        return api('series', {run: l.id, since: l.since, points: POINTS})
            .then(function (res) {
              if (mine !== generation) return true;
              const complete = view.appendLive(res, l.index);
              let earliest = null;
              res.metrics.forEach(function (m) {
                m.series.forEach(function (s) {
                  if (s.end_ns !== null && (earliest === null || s.end_ns < earliest)) earliest = s.end_ns;
                });
              });
              if (earliest !== null) l.since = Math.max(l.since || 0, earliest);
              l.done = res.status !== 'running';
              return complete;
            });
      })).then(function (results) {
        if (mine !== generation) return;
        const ended = live.some(function (l) { return l.done; });
        const grown = results.some(function (c) { return !c; });
        if (!ended && !grown && ++polls % PANELS_EVERY) return null;
        return refreshPanels(specs, mine).then(function () { return ended; });
      }).then(function (ended) {
        if (mine !== generation) return;
        if (ended) {
          // What still runs goes on live; the ended run's panels are final.
          const running = view.data.runs.filter(function (r) { return r.status === 'running'; });
          if (running.length) startLive(view.data, specs, mine);
          return;
        }
        liveTimer = setTimeout(poll, LIVE_PERIOD_MS);
      }).catch(function (e) {
        message('Live update failed: ' + e.message + ' (retrying)');
        liveTimer = setTimeout(poll, LIVE_PERIOD_MS * 5);
      });
    }
    liveTimer = setTimeout(poll, LIVE_PERIOD_MS);
  }

  // ---- start --------------------------------------------------------------------------
  const inputs = {q: 'fp-q', status: 'fp-status', tag: 'fp-tag', from: 'fp-from', to: 'fp-to'};
  function showFilters() {
    Object.keys(inputs).forEach(function (k) { $(inputs[k]).value = state.filters[k]; });
  }
  function bindFilters() {
    let timer = null;
    Object.keys(inputs).forEach(function (k) {
      const input = $(inputs[k]);
      input.addEventListener(k === 'q' || k === 'tag' ? 'input' : 'change', function () {
        state.filters[k] = input.value;
        state.table.page = 0;
        writeHash();
        clearTimeout(timer);
        timer = setTimeout(loadTree, 200);
      });
    });
    $('fp-filters').addEventListener('submit', function (e) { e.preventDefault(); });
    $('fp-prev').addEventListener('click', function () { turnPage(-1); });
    $('fp-next').addEventListener('click', function () { turnPage(1); });
  }

  readHash();
  showFilters();
  bindFilters();
  window.addEventListener('resize', function () { if (view) view.resize(); });
  window.addEventListener('hashchange', function () {
    readHash();
    showFilters();
    lastTree = null;
    lastTable = null;
    loadTree();
    draw();
  });
  api('info').then(function (info) {
    $('fp-db').textContent = info.db + ' · ' + info.runs + ' runs · footprint ' + info.footprint;
  }).catch(function (e) { message('Cannot reach the server: ' + e.message); });
  Promise.all([loadTree(), draw()]);
})();
