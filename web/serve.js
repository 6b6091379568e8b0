// footprint serve: the web UI (docs/serve.md). Browses experiments -> workloads -> groups of
// repetitions -> runs through the JSON API (the tree is asked again every 2 s, so new runs
// appear and ended runs change state), keeps the selection and the filters in the URL's hash (so
// a view reloads and can be shared), draws the selected runs with the same charts as footprint
// plot (web/charts.js), compares the selected groups and runs as footprint compare does, and
// appends the new samples of running runs every second. Every string from the database goes
// into the page as text (textContent), never as HTML.
//
// For tests: window.footprintServe holds {ready, view, selected(), compared(), describe(),
// unfold(), counts}, where counts tells how many plot, series and tree requests were made.
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
  };
  let view = null;        // the charts of the current selection
  let generation = 0;     // bumps on each redraw; stale responses are dropped
  let liveTimer = null;
  const app = window.footprintServe = {
    ready: false, view: null, counts: {plot: 0, series: 0, tree: 0},
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
      if (v !== '' && v !== null && v !== undefined) query.set(k, v);
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
  }
  function writeHash() {
    const p = new URLSearchParams();
    Object.keys(state.filters).forEach(function (k) {
      if (state.filters[k]) p.set(k, state.filters[k]);
    });
    state.workloads.forEach(function (w) { p.append('workload', JSON.stringify(w)); });
    state.groups.forEach(function (id) { p.append('group', id); });
    state.runs.forEach(function (id) { p.append('run', id); });
    const hash = '#' + p.toString();
    if (location.hash !== hash) history.replaceState(null, '', location.pathname + hash);
  }

  // ---- browsing -----------------------------------------------------------------------
  function filterParams() {
    return {q: state.filters.q, status: state.filters.status, tag: state.filters.tag,
            from: state.filters.from, to: state.filters.to};
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
    return api('tree', filterParams())
        .then(function (tree) { if (mine === treeGeneration) showTree(tree); })
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

  function selectionChanged() {
    writeHash();
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
      tr.appendChild(el('td', f.label));
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
    box.appendChild(table);
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
      exportButtons([], null);
      if (!specs.length) {
        message('Select runs, groups of repetitions, or whole workloads, on the left.');
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
        exportButtons(ids, data);
        view = app.view = fc.createView(data, chartsBox);
        view.render();
        if (!view.charts.length) message('Nothing to draw: the selected runs have no samples, values or totals.');
        startLive(data, mine);
        return compare && compare.then(function (c) {
          if (mine === generation) compareTable(c);
        }).catch(function (e) { $('fp-compare').textContent = 'No comparison: ' + e.message; });
      });
    }).catch(function (e) {
      if (mine === generation) message('Cannot show the selection: ' + e.message);
    }).then(function () {
      if (mine === generation) app.ready = true;
    });
  }

  // ---- live runs ----------------------------------------------------------------------
  // Each running run is asked for its samples after the last one drawn (the earliest last
  // sample of its series; appendLive drops what is drawn already).
  function startLive(data, mine) {
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
    function poll() {
      if (mine !== generation) return;
      Promise.all(live.map(function (l) {
        app.counts.series++;
        return api('series', {run: l.id, since: l.since === null ? '' : l.since, points: POINTS})
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
        // A run that ended (or grew series not drawn yet): draw everything once more.
        if (results.some(function (c) { return !c; }) || live.some(function (l) { return l.done; })) {
          draw();
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
        writeHash();
        clearTimeout(timer);
        timer = setTimeout(loadTree, 200);
      });
    });
    $('fp-filters').addEventListener('submit', function (e) { e.preventDefault(); });
  }

  readHash();
  showFilters();
  bindFilters();
  window.addEventListener('resize', function () { if (view) view.resize(); });
  window.addEventListener('hashchange', function () {
    readHash();
    showFilters();
    lastTree = null;
    loadTree();
    draw();
  });
  api('info').then(function (info) {
    $('fp-db').textContent = info.db + ' · ' + info.runs + ' runs · footprint ' + info.footprint;
  }).catch(function (e) { message('Cannot reach the server: ' + e.message); });
  Promise.all([loadTree(), draw()]);
})();
