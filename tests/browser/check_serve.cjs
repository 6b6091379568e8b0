// Drives footprint serve's web UI in headless Chromium (Debian's, through playwright-core; no
// browser is downloaded) and prints, as JSON on stdout, what it saw:
//   node check_serve.cjs CONFIG.json
// CONFIG: {url, pick: [run ids to tick], xss: run id, live: run id or null, groups: [two group
// ids], spawn: [argv of a short footprint run named fresh], out: folder}.
// Steps: open the UI, tick the runs of `pick` in the tree, read back the charts; open the
// resulting URL in a second page (the view must come back); select the XSS run and read its
// name as the page shows it; select the live run and count its points twice, 3 s apart; tick
// the two groups in the tree and read the comparison, open the folded monitor/sys charts and
// save a chart as PNG and JSON; start `spawn` and watch its run appear in the tree, running,
// then ok, without a reload. Screenshots: OUT/selection.png, OUT/live.png, OUT/groups.png.
// Used by test_serve_browser.py.
'use strict';
const fs = require('fs');
const path = require('path');
const {spawn} = require('child_process');
const {launchChromium} = require('./chromium.cjs');

const ready = (page) => page.waitForFunction(
    () => window.footprintServe && window.footprintServe.ready &&
          document.querySelectorAll('.fp-run-check').length > 0, null, {timeout: 60000});

function watch(page, log) {
  page.on('console', (m) => log.console.push({type: m.type(), text: m.text()}));
  page.on('pageerror', (e) => log.console.push({type: 'pageerror', text: String(e)}));
  page.on('dialog', (d) => { log.dialogs.push(d.message()); d.dismiss(); });
  page.on('request', (r) => log.requests.push(r.url()));
}

// A wait on the page that timed out, with what the page showed then: the URL, its message,
// whether it was ready, and each chart's series (a failure under load says why, not only where).
async function explain(page, error) {
  const shown = await page.evaluate(() => ({
    hash: location.hash, ready: window.footprintServe.ready,
    message: document.getElementById('fp-message').textContent,
    charts: window.footprintServe.describe().map((c) => [c.kind, c.title, c.series.map((s) => s.name)]),
  })).catch((e) => 'unreadable: ' + e.message);
  throw new Error(error.message + '\nthe page then: ' + JSON.stringify(shown));
}

async function settle(page) {
  await page.waitForFunction(() => window.footprintServe.ready, null, {timeout: 60000})
      .catch((e) => explain(page, e));
}

async function main() {
  const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const browser = await launchChromium();
  const log = {console: [], dialogs: [], requests: []};
  const out = {};
  try {
    const context = await browser.newContext({viewport: {width: 1400, height: 1000},
                                              acceptDownloads: true});
    const page = await context.newPage();
    watch(page, log);
    await page.goto(config.url);
    await ready(page);
    out.tree = await page.evaluate(() => Array.from(document.querySelectorAll('.fp-exp')).map(
        (e) => ({experiment: e.querySelector('.fp-exp-name').textContent,
                 workloads: Array.from(e.querySelectorAll('.fp-wl-check')).map((w) => w.dataset.workload)})));
    // The runs table: the landing view. Status colours, sorting, paging, filters, the URL.
    const tableRows = () => page.evaluate(() => Array.from(document.querySelectorAll('#fp-table tr[data-run]'))
        .map((tr) => tr.children[2].textContent));
    const waitTable = (text) => page.waitForFunction((t) => document.getElementById('fp-table-count')
        .textContent.startsWith(t), text, {timeout: 30000});
    await page.waitForFunction(() => document.querySelectorAll('#fp-table tr[data-run]').length > 0,
                               null, {timeout: 30000});
    out.table = await page.evaluate(() => {
      const colour = (s) => { const b = document.querySelector('#fp-table .fp-status-' + s); return b && getComputedStyle(b).backgroundColor; };
      return {headers: Array.from(document.querySelectorAll('#fp-table th')).slice(1).map((th) => th.textContent),
              rows: document.querySelectorAll('#fp-table tr[data-run]').length,
              names: Array.from(document.querySelectorAll('#fp-table tr[data-run]')).map((tr) => tr.children[2].textContent),
              badge_colours: {ok: colour('ok'), failed: colour('failed'), running: colour('running')},
              live_marked: !!document.querySelector('#fp-table .fp-status-running.fp-live')};
    });
    await page.evaluate(() => { location.hash = 'per=5'; });  // pages of 5 runs
    await waitTable(out.table.rows + ' runs · 1–5');
    await page.click('#fp-table th[data-sort="name"]');  // newest first -> by name, descending
    await page.click('#fp-table th[data-sort="name"]');  // ascending
    await page.waitForFunction(() => document.querySelector('#fp-table th[data-sorted="asc"]'), null, {timeout: 30000});
    await page.waitForTimeout(300);
    out.table.sorted_names = await tableRows();
    out.table.sorted_url = page.url();
    const back = await context.newPage();
    await back.goto(out.table.sorted_url);
    await back.waitForFunction(() => document.querySelectorAll('#fp-table tr[data-run]').length > 0, null, {timeout: 30000});
    out.table.restored_names = await back.evaluate(() => Array.from(document.querySelectorAll('#fp-table tr[data-run]')).map((tr) => tr.children[2].textContent));
    out.table.restored_sorted = await back.evaluate(() => document.querySelector('#fp-table th[data-sort="name"]').dataset.sorted);
    await back.close();
    if (!(await page.isDisabled('#fp-next'))) {
      await page.click('#fp-next');
      await page.waitForFunction(() => /page=1/.test(location.hash), null, {timeout: 30000});
      await page.waitForTimeout(500);
    }
    out.table.page2_url = page.url();
    out.table.page2_first = (await tableRows())[0];
    await page.fill('#fp-q', 'lr=0.1');
    await waitTable('2 runs');
    out.table.lr_filter = await tableRows();
    await page.click('#fp-columns > summary');
    await page.check('.fp-col-check[value="param:lr"]');
    await page.click('#fp-columns > summary');
    await page.waitForFunction(() => document.querySelector('#fp-table th[data-sort="param:lr"]'), null, {timeout: 30000});
    out.table.param_column = await page.evaluate(() => Array.from(document.querySelectorAll('#fp-table tr[data-run]')).map((tr) => tr.lastChild.textContent));
    await page.fill('#fp-q', 'status:failed');
    await waitTable('1 run');
    out.table.status_filter = await tableRows();
    await page.evaluate(() => { location.hash = ''; });
    await page.fill('#fp-q', '');
    await page.waitForFunction(() => !/sort=|col=|q=/.test(location.hash), null, {timeout: 30000});
    await settle(page);

    // A run's header, the param diff, the failed-vs-ok warning, (no experiment) › (no workload).
    const showHash = async (hash, until) => {
      await page.evaluate((h) => { location.hash = h; }, hash);
      await page.waitForFunction(until, null, {timeout: 60000});
    };
    await showHash('run=' + config.pick[0], () => document.querySelector('#fp-run-header'));
    out.header = await page.evaluate(() => {
      const h = {title: document.querySelector('#fp-header h2').textContent};
      document.querySelectorAll('#fp-run-header dt').forEach((dt) => { h[dt.textContent] = dt.nextSibling.textContent; });
      return h;
    });
    await showHash('run=' + config.pick.join('&run='), () => document.querySelector('.fp-diff'));
    out.diff = await page.evaluate(() => Array.from(document.querySelectorAll('.fp-diff tr[data-param]')).map(
        (tr) => [tr.dataset.param, tr.dataset.differs].concat(Array.from(tr.children).slice(1).map((td) => td.textContent))));
    const warning = () => page.evaluate(() => !document.getElementById('fp-warning').hidden);
    await page.waitForFunction(() => window.footprintServe.ready, null, {timeout: 60000});
    out.warning = {shown_for_ok_only: await warning()};
    await showHash('run=' + config.broken + '&run=' + config.pick[0],
                   () => window.footprintServe.ready && window.footprintServe.selected().length === 2);
    out.warning.shown = await warning();
    out.warning.text = await page.evaluate(() => document.getElementById('fp-warning').textContent);
    await page.evaluate(() => { window.footprintServe.ready = false; location.hash = 'workload=' + encodeURIComponent('["",""]'); });
    await page.waitForFunction(() => window.footprintServe.ready && window.footprintServe.selected().length > 0 &&
        /workload/.test(location.hash), null, {timeout: 60000});
    out.unnamed_workload = await page.evaluate(() => window.footprintServe.selected());
    await page.evaluate(() => { location.hash = ''; });
    await settle(page);

    // Tick the runs one by one, as a person would.
    for (const id of config.pick) {
      await page.evaluate(() => { window.footprintServe.ready = false; });
      await page.check('input.fp-run-check[value="' + id + '"]');
      await settle(page);
    }
    // The cpu and memory charts hold both runs (the charts fill in one by one: on a busy machine
    // the first can be complete while the others are not yet drawn).
    await page.waitForFunction((n) => {
      const charts = window.footprintServe.describe().filter((c) => c.kind === 'timeseries');
      return ['cpu', 'memory'].every((t) => charts.some(
          (c) => c.title.split(' (')[0] === t && c.series.length === n));
    }, config.pick.length, {timeout: 60000}).catch((e) => explain(page, e));
    out.selected = await page.evaluate(() => window.footprintServe.selected());
    out.charts = await page.evaluate(() => window.footprintServe.describe());
    out.compare_rows = await page.evaluate(() => document.querySelectorAll('.fp-compare tr').length);
    out.url = page.url();
    await page.screenshot({path: path.join(config.out, 'selection.png')});
    // A 1366 px wide screen (a common laptop's): nothing may reach past its right edge.
    await page.setViewportSize({width: 1366, height: 768});
    await page.waitForTimeout(300);  // the charts follow the window's size
    out.at_1366 = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth,
      window: document.documentElement.clientWidth,
      widest: Array.from(document.querySelectorAll('main *')).reduce(
          (m, e) => Math.max(m, e.getBoundingClientRect().right), 0),
      culprits: Array.from(document.querySelectorAll('body *')).filter(
          (e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
          .slice(0, 6).map((e) => e.tagName + '.' + e.className + '#' + e.id + ' ' +
                           Math.round(e.getBoundingClientRect().right)),
    }));
    await page.setViewportSize({width: 1400, height: 1000});

    // The URL restores the view.
    const again = await context.newPage();
    watch(again, log);
    await again.goto(out.url);
    await ready(again);
    await again.waitForFunction(() => window.footprintServe.describe().length > 0, null, {timeout: 60000});
    out.restored = {
      selected: await again.evaluate(() => window.footprintServe.selected()),
      charts: await again.evaluate(() => window.footprintServe.describe()),
      checked: await again.evaluate(() => Array.from(document.querySelectorAll('.fp-run-check:checked')).map((c) => c.value)),
    };
    await again.close();

    // The XSS run: its name is text in the tree and in the run table.
    await page.evaluate((id) => { location.hash = 'run=' + id; }, config.xss);
    await page.waitForFunction((id) => window.footprintServe.ready &&
        window.footprintServe.selected().join() === id &&
        document.querySelector('.fp-runs td:nth-child(2)'), config.xss, {timeout: 60000});
    out.xss = await page.evaluate((id) => ({
      tree: document.querySelector('input.fp-run-check[value="' + id + '"]')
          .parentElement.querySelector('.fp-run-name').textContent,
      table: document.querySelector('.fp-runs td:nth-child(2)').textContent,
      scripts: document.querySelectorAll('script').length,
      injected: document.querySelectorAll('main script, aside script').length,
    }), config.xss);

    // A live run grows without the page reloading.
    if (config.live) {
      await page.evaluate((id) => { window.fpMarker = 'same page'; location.hash = 'run=' + id; },
                          config.live);
      await page.waitForFunction(() => window.footprintServe.describe().some(
          (c) => c.kind === 'timeseries' && c.title.startsWith('cpu ') && c.series[0].points > 0),
          null, {timeout: 60000});
      const cpuPoints = () => page.evaluate(() => window.footprintServe.describe()
          .find((c) => c.kind === 'timeseries' && c.title.startsWith('cpu ')).series[0].points);
      const counts = () => page.evaluate(() => Object.assign({}, window.footprintServe.counts));
      const duration = () => page.evaluate(() => document.querySelector('#fp-selection .fp-runs tr[data-status] td:nth-child(5)').textContent);
      out.live = {before: await cpuPoints(), counts_before: await counts(),
                  duration_before: await duration()};
      await page.waitForTimeout(3000);
      out.live.after = await cpuPoints();
      out.live.counts_after = await counts();
      out.live.duration_after = await duration();
      out.live.live_marker = await page.evaluate(() => !!document.querySelector('#fp-selection tr[data-status=running]') &&
          getComputedStyle(document.querySelector('#fp-selection tr[data-status=running] td:nth-child(3)'), '::before').content.includes('live'));
      out.live.marker = await page.evaluate(() => window.fpMarker);
      await page.screenshot({path: path.join(config.out, 'live.png')});
    }

    // Two groups of repetitions, ticked as two items of the tree.
    // The tree follows the URL's selection, also when the runs it lists stay the same (only
    // ended runs: nothing in the tree changes meanwhile).
    await page.evaluate((id) => { location.hash = 'status=ok&run=' + id; }, config.pick[0]);
    await page.waitForFunction((id) => window.footprintServe.ready &&
        window.footprintServe.selected().join() === id &&
        document.querySelector('input.fp-run-check[value="' + id + '"]:checked'), config.pick[0],
        {timeout: 60000});
    await page.evaluate(() => { location.hash = 'status=ok'; });
    await page.waitForFunction(() => window.footprintServe.ready &&
        window.footprintServe.selected().length === 0, null, {timeout: 60000});
    await page.waitForTimeout(500);
    out.cleared_checked = await page.evaluate(
        () => document.querySelectorAll('#fp-tree input:checked').length);
    for (const id of config.groups) {
      await page.evaluate(() => { window.footprintServe.ready = false; });
      await page.check('input.fp-group-check[value="' + id + '"]');
      await settle(page);
    }
    await page.waitForFunction(() => document.querySelectorAll('.fp-verdicts li').length > 0,
                               null, {timeout: 60000});
    const timeseriesTitles = () => page.evaluate(() => window.footprintServe.describe()
        .filter((c) => c.kind === 'timeseries').map((c) => c.title));
    out.groups = await page.evaluate((ids) => ({
      compared: window.footprintServe.compared(),
      selected: window.footprintServe.selected(),
      runLabels: Array.from(document.querySelectorAll('.fp-runs:not(.fp-compare) td:nth-child(2)'))
          .map((td) => td.textContent),
      header: Array.from(document.querySelectorAll('.fp-compare tr:first-child th'))
          .map((th) => th.textContent),
      rows: Array.from(document.querySelectorAll('.fp-compare tr')).slice(1).map(
          (tr) => Array.from(tr.querySelectorAll('td')).map((td) => td.textContent)),
      verdicts: Array.from(document.querySelectorAll('.fp-verdicts li')).map((li) => li.textContent),
      tree: ids.map((id) => {
        const g = document.querySelector('.fp-group[data-group="' + id + '"]');
        return {runs: Array.from(g.querySelectorAll('.fp-run-name')).map((n) => n.textContent),
                warmups: g.querySelectorAll('.fp-warmup').length,
                summary: g.querySelector('summary').textContent};
      }),
      totals: window.footprintServe.view.charts.filter((c) => c.kind === 'totals' && !c.title.startsWith('footprint'))
          .map((c) => ({title: c.title, types: c.chart.getOption().series.map((x) => x.type)})),
      line_colours: window.footprintServe.view.charts.filter((c) => c.kind === 'timeseries')[0].chart
          .getOption().series.map((x) => x.color),
      constants: window.footprintServe.view.constants(),
      fold: document.querySelector('.fp-fold > summary') &&
          document.querySelector('.fp-fold > summary').textContent,
    }), config.groups);
    out.groups.before_unfold = await timeseriesTitles();
    await page.click('.fp-fold > summary');
    await page.waitForFunction(() => window.footprintServe.describe().some(
        (c) => c.title.startsWith('sys.')), null, {timeout: 30000});
    out.groups.after_unfold = await timeseriesTitles();
    await page.screenshot({path: path.join(config.out, 'groups.png')});
    // Saving the first chart, as its toolbox buttons do.
    out.saved = {};
    const first = (await page.evaluate(() => window.footprintServe.describe()))[0];
    for (const kind of ['png', 'json']) {
      const [download] = await Promise.all([
        page.waitForEvent('download', {timeout: 30000}),
        page.evaluate(([i, k]) => window.footprintServe.view.save(i, k), [first.id, kind]),
      ]);
      const file = path.join(config.out, 'saved.' + kind);
      await download.saveAs(file);
      out.saved[kind] = {file: file, name: download.suggestedFilename(), title: first.title};
    }

    // A run started now appears in the tree, running, then ok: no reload, no click.
    await page.evaluate(() => { location.hash = ''; });  // every status again
    await page.evaluate(() => { window.fpMarker = 'tree page'; });
    const treeCount = () => page.evaluate(() => window.footprintServe.counts.tree);
    const statusOfFresh = () => page.evaluate(() => {
      const li = Array.from(document.querySelectorAll('.fp-run-list li')).find(
          (l) => l.querySelector('.fp-run-name') &&
                 l.querySelector('.fp-run-name').textContent === 'fresh');
      return li ? li.dataset.status : null;
    });
    out.refresh = {tree_before: await treeCount(), seen: []};
    const child = spawn(config.spawn[0], config.spawn.slice(1), {stdio: 'ignore'});
    const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    const deadline = Date.now() + 60000;
    let exitCode = null;
    exited.then((code) => { exitCode = code; });
    while (Date.now() < deadline) {
      const status = await statusOfFresh();
      if (out.refresh.seen[out.refresh.seen.length - 1] !== status) out.refresh.seen.push(status);
      if (status === 'ok' && exitCode !== null) break;
      await page.waitForTimeout(100);
    }
    out.refresh.exit_code = await exited;
    out.refresh.tree_after = await treeCount();
    out.refresh.marker = await page.evaluate(() => window.fpMarker);
  } finally {
    await browser.close();
  }
  out.console = log.console;
  out.dialogs = log.dialogs;
  out.requests = log.requests;
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack || e) + '\n');
  process.exit(1);
});
