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
const {chromium} = require('playwright-core');

const ready = (page) => page.waitForFunction(
    () => window.footprintServe && window.footprintServe.ready &&
          document.querySelectorAll('.fp-run-check').length > 0, null, {timeout: 60000});

function watch(page, log) {
  page.on('console', (m) => log.console.push({type: m.type(), text: m.text()}));
  page.on('pageerror', (e) => log.console.push({type: 'pageerror', text: String(e)}));
  page.on('dialog', (d) => { log.dialogs.push(d.message()); d.dismiss(); });
  page.on('request', (r) => log.requests.push(r.url()));
}

async function settle(page) {
  await page.waitForFunction(() => window.footprintServe.ready, null, {timeout: 60000});
}

async function main() {
  const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu'],
  });
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
    // Tick the runs one by one, as a person would.
    for (const id of config.pick) {
      await page.evaluate(() => { window.footprintServe.ready = false; });
      await page.check('input.fp-run-check[value="' + id + '"]');
      await settle(page);
    }
    await page.waitForFunction((n) => window.footprintServe.describe().some(
        (c) => c.kind === 'timeseries' && c.series.length === n), config.pick.length, {timeout: 60000});
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
      out.live = {before: await cpuPoints(), counts_before: await counts()};
      await page.waitForTimeout(3000);
      out.live.after = await cpuPoints();
      out.live.counts_after = await counts();
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
