// Drives the queue of footprint serve's web UI (web/queue.js) in headless Chromium and prints,
// as JSON on stdout, what it saw:
//   node check_queue.cjs CONFIG.json
// CONFIG: {url (a run token's), read_url (a read token's), manifest, plan, out, watch (a job id:
// only wait for it to end in the table)}.
// Steps: launch `manifest` from the form, follow its output, wait for it to end, open its
// evaluation page (its runs beside earlier ones, verdicts); launch `plan`, wait for its output to
// name its processes, tick it and cancel it, time until /proc has none of them; with the read
// token, launch and read the refusal. Screenshots: OUT/queue-evaluation.png, OUT/queue-cancel.png.
'use strict';
const fs = require('fs');
const path = require('path');
const {launchChromium} = require('./chromium.cjs');

const jobs = (page) => page.evaluate(() => window.footprintQueue.jobs);

async function open(browser, url, log) {
  const context = await browser.newContext({viewport: {width: 1366, height: 1000}});
  const page = await context.newPage();
  page.on('console', (m) => log.console.push({type: m.type(), text: m.text()}));
  page.on('pageerror', (e) => log.console.push({type: 'pageerror', text: String(e)}));
  page.on('request', (r) => log.requests.push(r.url()));
  await page.goto(url + '#queue');
  await page.waitForFunction(() => window.footprintQueue && window.footprintQueue.ready,
                             null, {timeout: 60000});
  return page;
}

async function launch(page, kind, file) {
  await page.selectOption('#fp-launch-kind', kind);
  await page.selectOption('#fp-launch-file', file);
  const before = (await jobs(page)).length;
  await page.click('#fp-launch-submit');
  await page.waitForFunction((n) => window.footprintQueue.jobs.length > n ||
                             document.getElementById('fp-queue-message').className === 'fp-warning',
                             before, {timeout: 30000});
  return page.evaluate(() => ({jobs: window.footprintQueue.jobs,
                               message: document.getElementById('fp-queue-message').textContent}));
}

function alive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]);
  } catch (e) {
    return false;
  }
}

async function evaluation(page, config, out) {
  const launched = await launch(page, 'evaluate', config.manifest);
  const job = launched.jobs[0];
  out.evaluation = {job: job.id};
  await page.waitForFunction(() => window.footprintQueue.logText().length > 0, null,
                             {timeout: 60000});
  out.evaluation.first_output = await page.evaluate(() => window.footprintQueue.logText());
  await page.waitForFunction((id) => window.footprintQueue.jobs.some(
      (j) => j.id === id && !['queued', 'running'].includes(j.state)), job.id, {timeout: 120000});
  out.evaluation.state = (await jobs(page)).find((j) => j.id === job.id).state;
  await page.waitForFunction(() => /\[job \d+ /.test(window.footprintQueue.logText()), null,
                             {timeout: 30000});
  out.evaluation.log = await page.evaluate(() => window.footprintQueue.logText());
  await page.click(`#fp-queue-table tr[data-job="${job.id}"] button:has-text("compare")`);
  await page.waitForSelector('#fp-evaluation[data-ready="1"]', {timeout: 60000});
  out.evaluation.rows = await page.evaluate(() => window.footprintQueue.comparedRows);
  out.evaluation.verdicts = await page.evaluate(() => window.footprintQueue.verdicts);
  out.evaluation.table = await page.evaluate(() => Array.from(
      document.querySelectorAll('.fp-evaluation-table tr[data-run]')).map(
      (tr) => Array.from(tr.children).map((td) => td.textContent)));
  await page.locator('#fp-evaluation').screenshot({path: path.join(config.out, 'queue-evaluation.png')});
}

async function cancel(page, config, out) {
  const launched = await launch(page, 'plan', config.plan);
  const job = launched.jobs[0];
  await page.waitForFunction(() => (window.footprintQueue.logText().match(/^(self|child|grandchild) \d+$/mg) || []).length === 3,
                             null, {timeout: 60000});
  const text = await page.evaluate(() => window.footprintQueue.logText());
  const pids = Array.from(text.matchAll(/^(?:self|child|grandchild) (\d+)$/mg)).map((m) => +m[1]);
  await page.check(`#fp-queue-table tr[data-job="${job.id}"] input[type=checkbox]`);
  const start = Date.now();
  await page.click('#fp-queue-cancel');
  while (pids.some(alive) && Date.now() - start < 10000) await new Promise((r) => setTimeout(r, 20));
  out.cancel = {job: job.id, pids: pids, alive_after: pids.filter(alive), gone_ms: Date.now() - start};
  await page.waitForFunction((id) => window.footprintQueue.jobs.some(
      (j) => j.id === id && j.state === 'cancelled'), job.id, {timeout: 30000});
  out.cancel.job_state = 'cancelled';
  await page.waitForFunction(() => /\[job \d+ cancelled/.test(window.footprintQueue.logText()),
                             null, {timeout: 30000});
  await page.locator('#fp-queue').screenshot({path: path.join(config.out, 'queue-cancel.png')});
}

async function main() {
  const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const browser = await launchChromium();
  const log = {console: [], requests: []};
  const out = {log};
  try {
    if (config.watch) {
      const page = await open(browser, config.url, log);
      await page.waitForFunction((id) => window.footprintQueue.jobs.some(
          (j) => j.id === id && j.state === 'done'), config.watch, {timeout: 60000});
      out.watched = (await jobs(page)).find((j) => j.id === config.watch);
    } else {
      const page = await open(browser, config.url, log);
      await evaluation(page, config, out);
      await cancel(page, config, out);
      const reader = await open(browser, config.read_url, log);
      out.refused = await launch(reader, 'plan', config.plan);
    }
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
