// footprint serve: the queue (docs/serve.md, "Launching"). A launch form (a manifest, a plan or
// a load's system under test from the folders serve was given, and their overrides), the queue's table with
// multi-select cancel and requeue, a job's output as it is printed (server-sent events), and an
// evaluation's page: its runs beside earlier evaluations of the same model, with the verdicts of
// footprint compare. Shown only when serve runs a queue (GET /api/queue answers). Changes are
// POSTed as JSON with a form token from GET /api/queue/form, one per change. Every string from
// the server goes into the page as text.
//
// For tests: window.footprintQueue = {ready, jobs, logText(), comparedRows, verdicts}.
(function () {
  'use strict';

  const $ = function (id) { return document.getElementById(id); };
  const PERIOD_MS = 1000;
  const OVERRIDES = ['model', 'device', 'batch_sizes', 'scenario', 'qps'];
  const app = window.footprintQueue = {ready: false, jobs: [], comparedRows: [], verdicts: []};
  let offered = null;
  let selected = new Set();
  let source = null;   // the EventSource of the job whose output is shown
  let timer = null;

  function el(tag, text, className) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (className) e.className = className;
    return e;
  }

  function getJson(path) {
    return fetch(path, {credentials: 'same-origin'}).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) throw new Error(body.error || r.statusText);
        return body;
      });
    });
  }

  // A change: a fresh form token first (each is good for one change), then the POST.
  function post(path, body) {
    return getJson('/api/queue/form').then(function (form) {
      return fetch(path, {method: 'POST', credentials: 'same-origin',
                          headers: {'Content-Type': 'application/json',
                                    'X-CSRF-Token': form.form_token},
                          body: JSON.stringify(body)});
    }).then(function (r) {
      return r.json().then(function (answer) {
        if (!r.ok) throw new Error(answer.error || r.statusText);
        return answer;
      });
    });
  }

  function say(text, bad) {
    const m = $('fp-queue-message');
    m.textContent = text;
    m.className = bad ? 'fp-warning' : 'fp-note';
  }

  function utc(ns) {
    return ns ? new Date(ns / 1e6).toISOString().replace('T', ' ').slice(0, 19) : '';
  }

  function fillFiles() {
    const kind = $('fp-launch-kind').value;
    const files = $('fp-launch-file');
    files.textContent = '';
    ({plan: offered.plans, load: offered.loads}[kind] || offered.manifests).forEach(function (f) {
      const o = el('option', f.file + (f.error ? ' (does not parse)' : ''));
      o.value = f.file;
      o.title = f.error || [f.model, f.device, (f.scenarios || []).join(' ')].join(' · ');
      files.appendChild(o);
    });
    // A load takes a scenario and rates; a plan, a target; a manifest, all its overrides.
    document.querySelectorAll('.fp-override').forEach(function (box) {
      box.hidden = kind === 'plan' || (kind === 'load' && !box.dataset.load);
    });
    $('fp-launch-target-box').hidden = kind === 'evaluate';
  }

  function launch(event) {
    event.preventDefault();
    const body = {kind: $('fp-launch-kind').value, file: $('fp-launch-file').value,
                  priority: parseInt($('fp-launch-priority').value || '0', 10)};
    if (body.kind !== 'evaluate') body.target = $('fp-launch-target').value;
    if (body.kind !== 'plan') {
      body.overrides = {};
      OVERRIDES.forEach(function (key) {
        const box = $('fp-override-' + key);
        const value = box.closest('label').hidden ? '' : box.value.trim();
        if (value) body.overrides[key] = value;
      });
    }
    post('/api/queue', body).then(function (job) {
      say('job ' + job.id + ' queued for ' + job.target);
      refresh().then(function () { showLog(job.id); });
    }).catch(function (e) { say('not launched: ' + e.message, true); });
  }

  function change(what) {
    const ids = Array.from(selected);
    if (!ids.length) return;
    post('/api/queue/' + what, {ids: ids}).then(function () {
      say(what + ': ' + ids.join(', '));
      selected = new Set();
      refresh();
    }).catch(function (e) { say(what + ' refused: ' + e.message, true); });
  }

  function jobRow(job) {
    const tr = el('tr');
    tr.dataset.job = job.id;
    const tick = el('input');
    tick.type = 'checkbox';
    tick.checked = selected.has(job.id);
    tick.setAttribute('aria-label', 'select job ' + job.id);
    tick.addEventListener('change', function () {
      if (tick.checked) selected.add(job.id); else selected.delete(job.id);
    });
    const first = el('td');
    first.appendChild(tick);
    tr.appendChild(first);
    const overrides = Object.keys(job.overrides).map(function (k) {
      return k + '=' + job.overrides[k];
    }).join(' ');
    [job.id, job.state, job.target, job.priority, job.kind, job.file, overrides, job.owner,
     utc(job.queued_at_ns), job.reason].forEach(function (v, i) {
      tr.appendChild(el('td', v, i === 1 ? 'fp-status fp-job-' + job.state : ''));
    });
    const actions = el('td');
    const log = el('button', 'output');
    log.type = 'button';
    log.addEventListener('click', function () { showLog(job.id); });
    actions.appendChild(log);
    if (job.kind === 'evaluate' && job.state === 'done') {
      const compare = el('button', 'compare');
      compare.type = 'button';
      compare.addEventListener('click', function () { showEvaluation(job); });
      actions.appendChild(compare);
    }
    tr.appendChild(actions);
    return tr;
  }

  function refresh() {
    return getJson('/api/queue').then(function (queue) {
      app.jobs = queue.jobs;
      $('fp-queue-you').textContent = queue.you.name + ' (' + queue.you.role + ')';
      const table = $('fp-queue-table');
      table.textContent = '';
      const head = el('tr');
      ['', 'id', 'state', 'target', 'prio', 'kind', 'file', 'overrides', 'owner', 'queued (UTC)',
       'reason', ''].forEach(function (h) { head.appendChild(el('th', h)); });
      table.appendChild(head);
      queue.jobs.forEach(function (job) { table.appendChild(jobRow(job)); });
    }).catch(function (e) { say('the queue cannot be read: ' + e.message, true); });
  }

  function showLog(id) {
    if (source) source.close();
    const pre = $('fp-queue-log');
    pre.textContent = '';
    $('fp-queue-log-title').textContent = 'output of job ' + id;
    $('fp-queue-log-box').hidden = false;
    source = new EventSource('/api/queue/' + id + '/events');
    const append = function (stream) {
      return function (e) {
        const span = el('span', JSON.parse(e.data).text, stream === 'err' ? 'fp-stderr' : '');
        pre.appendChild(span);
        pre.scrollTop = pre.scrollHeight;
      };
    };
    source.addEventListener('out', append('out'));
    source.addEventListener('err', append('err'));
    source.addEventListener('end', function (e) {
      const job = JSON.parse(e.data);
      pre.appendChild(el('span', '\n[job ' + job.id + ' ' + job.state +
                         (job.reason ? ': ' + job.reason : '') + ']\n', 'fp-note'));
      source.close();
      source = null;
      refresh();
    });
  }
  app.logText = function () { return $('fp-queue-log').textContent; };

  function init() {
    getJson('/api/info').then(function (info) {
      if (!info.queue) return;  // serve was given no folders
      return getJson('/api/queue/form').then(start);
    }).catch(function (e) { say('the queue cannot be read: ' + e.message, true); });
  }

  function start(form) {
    offered = form;
    $('fp-queue-link').hidden = false;
    $('fp-launch-kind').addEventListener('change', fillFiles);
    $('fp-launch').addEventListener('submit', launch);
    $('fp-queue-cancel').addEventListener('click', function () { change('cancel'); });
    $('fp-queue-requeue').addEventListener('click', function () { change('requeue'); });
    $('fp-queue-link').addEventListener('click', toggle);
    fillFiles();
    if (location.hash.indexOf('queue') >= 0) toggle();
    app.ready = true;
  }

  function toggle() {
    const box = $('fp-queue');
    box.hidden = !box.hidden;
    clearInterval(timer);
    if (!box.hidden) {
      refresh();
      timer = setInterval(function () { if (!document.hidden) refresh(); }, PERIOD_MS);
    }
  }

  // An evaluation's runs and earlier runs of the same model, from the runs' stored summaries:
  // the job's own are those whose manifest is the job's copy (job-ID.yaml).
  function evaluationRow(summary, jobId) {
    const meta = summary.meta || {};
    const evaluation = meta.evaluation || {};
    const params = (meta.params || {});
    const totals = summary.totals || {};
    const load = summary.load || {};
    const queries = load.queries || 0;
    let energy = null;
    Object.values(load.energy || {}).forEach(function (e) {
      if (e.per_query_j !== null && e.per_query_j !== undefined) energy = (energy || 0) + e.per_query_j;
    });
    const device = ((evaluation.manifest || {}).framework || {}).device || '';
    const hardware = (meta.hardware || {}).cpu_model || '';
    return {
      id: summary.run.id, name: summary.run.name, status: summary.run.status,
      started_at_ns: summary.run.started_at_ns,
      mine: String(evaluation.manifest_path || '').endsWith('/job-' + jobId + '.yaml'),
      model: params.model, device: device, host: summary.run.host, hardware: hardware,
      batch: params.batch, scenario: params.scenario, qps: params.qps || '',
      p50_s: totals.load_latency_p50_s, p99_s: totals.load_latency_p99_s,
      queries_per_s: totals.load_qps,
      cpu_per_query_s: queries && totals.load_cpu_s !== undefined ? totals.load_cpu_s / queries : null,
      energy_per_query_j: energy, peak_memory_bytes: totals.peak_memory_bytes,
      // What footprint load judged: validity (latency bound) and LoadGen's early stopping.
      verdict: [load.validity, load.early_stopping].filter(Boolean).join('; '),
    };
  }

  function number(v, unit) {
    if (v === null || v === undefined) return '—';
    if (unit === 's') return v < 1 ? (v * 1000).toPrecision(3) + ' ms' : v.toPrecision(3) + ' s';
    if (unit === 'B') return (v / 1048576).toFixed(1) + ' MiB';
    if (unit === 'J') return v.toPrecision(3) + ' J';
    return v.toPrecision(4);
  }

  function drawEvaluation(box, rows) {
    const table = el('table', null, 'fp-table fp-evaluation-table');
    const head = el('tr');
    ['', 'run', 'model', 'device', 'host', 'batch', 'scenario', 'qps', 'p50', 'p99',
     'queries/s', 'CPU/query', 'energy/query', 'peak memory', 'started (UTC)', 'verdict']
        .forEach(function (h) { head.appendChild(el('th', h)); });
    table.appendChild(head);
    rows.forEach(function (r) {
      const tr = el('tr', null, r.mine ? 'fp-this-job' : '');
      tr.dataset.run = r.id;
      [r.mine ? 'this job' : 'earlier', r.name, r.model, r.device, r.host, r.batch, r.scenario,
       r.qps, number(r.p50_s, 's'), number(r.p99_s, 's'), number(r.queries_per_s),
       number(r.cpu_per_query_s, 's'), number(r.energy_per_query_j, 'J'),
       number(r.peak_memory_bytes, 'B'), utc(r.started_at_ns), r.verdict]
          .forEach(function (v) { tr.appendChild(el('td', v)); });
      table.appendChild(tr);
    });
    const scroll = el('div', null, 'fp-scroll');
    scroll.appendChild(table);
    box.appendChild(scroll);
  }

  // Each of the job's runs against the newest earlier run of the same scenario, batch and
  // rate: footprint compare's verdict lines.
  function drawVerdicts(box, rows) {
    const list = el('ul', null, 'fp-verdicts');
    box.appendChild(list);
    const pairs = rows.filter(function (r) { return r.mine; }).map(function (r) {
      const before = rows.find(function (o) {
        return !o.mine && o.status === 'ok' && o.scenario === r.scenario && o.batch === r.batch &&
               o.qps === r.qps;
      });
      return before ? [before, r] : null;
    }).filter(Boolean);
    if (!pairs.length) list.appendChild(el('li', 'no earlier run of the same scenario to compare'));
    return Promise.all(pairs.map(function (pair) {
      return getJson('/api/compare?' + new URLSearchParams({sets: pair[0].id + ',' + pair[1].id}))
          .then(function (c) {
            // With one run a side there is no test (and no verdict): the headline figures'
            // ratios are said as such.
            (c.figures || []).forEach(function (f) {
              const change = (f.changes || [])[1];
              let line = (f.verdicts || [])[1];
              if (!line && f.headline && !f.own && change && change.ratio) {
                line = f.label + ': ' + change.ratio.toPrecision(3) +
                       ' times the earlier run\'s (one run each: no significance test)';
              }
              if (!line) return;
              app.verdicts.push(line);
              list.appendChild(el('li', pair[1].name + ' against ' + pair[0].name + ' (' +
                                  pair[0].device + ', ' + pair[0].host + '): ' + line));
            });
          });
    }));
  }

  function showEvaluation(job) {
    const box = $('fp-evaluation');
    box.textContent = '';
    box.hidden = false;
    const manifest = offered.manifests.find(function (m) { return m.file === job.file; }) || {};
    const model = job.overrides.model || manifest.model;
    box.appendChild(el('h2', 'Evaluation of job ' + job.id + ' (' + job.file + ', ' + model +
                             ') beside earlier evaluations of the model'));
    app.comparedRows = [];
    app.verdicts = [];
    getJson('/api/runs?' + new URLSearchParams({param: 'model=' + model, limit: 40}))
        .then(function (list) {
          return Promise.all(list.runs.map(function (r) {
            return getJson('/api/runs/' + encodeURIComponent(r.id));
          }));
        })
        .then(function (summaries) {
          const rows = summaries.map(function (s) { return evaluationRow(s, job.id); });
          rows.sort(function (a, b) {
            return (b.mine - a.mine) || (b.started_at_ns - a.started_at_ns);
          });
          app.comparedRows = rows;
          drawEvaluation(box, rows);
          return drawVerdicts(box, rows);
        })
        .then(function () { box.dataset.ready = '1'; })
        .catch(function (e) { box.appendChild(el('p', 'cannot compare: ' + e.message, 'fp-warning')); });
  }

  window.addEventListener('load', init);
})();
