// Opens one run in footprint serve's web UI in headless Chromium (Debian's, through
// playwright-core) and prints, as JSON on stdout, what it saw of the run's profiler traces:
//   node check_profile.cjs CONFIG.json
// CONFIG: {url, run: run id, out: folder}. Reads the artifact links of the run's header,
// clicks the first and saves what it downloads to OUT/, and reads the profiler windows marked
// on the run's charts (window.footprintServe.describe()). Used by test_profile_browser.py.
'use strict';
const fs = require('fs');
const path = require('path');
const {launchChromium} = require('./chromium.cjs');

async function main() {
  const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const browser = await launchChromium();
  const out = {console: []};
  try {
    const context = await browser.newContext({acceptDownloads: true});
    const page = await context.newPage();
    page.on('console', (m) => out.console.push({type: m.type(), text: m.text()}));
    page.on('pageerror', (e) => out.console.push({type: 'pageerror', text: String(e)}));
    const base = config.url.split('#')[0];
    await page.goto(base + '#run=' + encodeURIComponent(config.run));
    await page.waitForSelector('#fp-artifacts a', {timeout: 60000});
    await page.waitForFunction(() => window.footprintServe.ready &&
                               window.footprintServe.describe().length > 0, null, {timeout: 60000});
    out.links = await page.evaluate(() => Array.from(document.querySelectorAll('#fp-artifacts a'))
        .map((a) => ({text: a.textContent, href: a.getAttribute('href')})));
    const [download] = await Promise.all([
      page.waitForEvent('download', {timeout: 30000}),
      page.click('#fp-artifacts a'),
    ]);
    const file = path.join(config.out, 'downloaded');
    await download.saveAs(file);
    out.download = {name: download.suggestedFilename(), file: file};
    out.windows = await page.evaluate(() => window.footprintServe.describe()
        .filter((c) => c.kind === 'timeseries')
        .map((c) => ({title: c.title,
                      windows: [].concat.apply([], c.series.map((s) => s.windows || []))})));
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
