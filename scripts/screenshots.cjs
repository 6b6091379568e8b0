// The screenshots of docs/images/, taken by scripts/screenshots (which records the runs):
//   node screenshots.cjs SERVE_URL PLOT_HTML OUT_DIR
// serve-groups.png: the two gzip groups ticked in the tree and compared; serve-training.png:
// the two trainings overlaid; plot.png: footprint plot's page of the same trainings.
'use strict';
const path = require('path');
const {chromium} = require('playwright-core');

async function ready(page) {
  await page.waitForFunction(() => window.footprintServe && window.footprintServe.ready &&
                                   document.querySelectorAll('.fp-run-check').length > 0,
                             null, {timeout: 60000});
}

// Ticks the boxes whose item (group summary or run label) shows `name`, one after another.
async function tick(page, selector, names) {
  for (const name of names) {
    await page.evaluate(() => { window.footprintServe.ready = false; });
    // A locator, found anew at each try: the tree is drawn again every 2 s.
    await page.locator('label', {hasText: name}).locator(selector).first().check();
    await page.waitForFunction(() => window.footprintServe.ready, null, {timeout: 60000});
  }
}

async function main() {
  const [url, plotHtml, out] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu'],
  });
  try {
    const page = await browser.newPage({viewport: {width: 1366, height: 900}});
    await page.goto(url);
    await ready(page);
    await tick(page, '.fp-group-check', ['gzip-1', 'gzip-6']);
    await page.waitForFunction(() => document.querySelectorAll('.fp-verdicts li').length > 0,
                               null, {timeout: 60000});
    await page.screenshot({path: path.join(out, 'serve-groups.png')});

    await page.evaluate(() => { location.hash = ''; });
    await page.waitForFunction(() => window.footprintServe.selected().length === 0);
    await tick(page, '.fp-run-check', ['cnn-lr0.01', 'cnn-lr0.05']);
    await page.setViewportSize({width: 1366, height: 1300});
    await page.waitForTimeout(500);  // the charts follow the window's size
    await page.screenshot({path: path.join(out, 'serve-training.png')});

    const plot = await browser.newPage({viewport: {width: 1366, height: 1300}});
    await plot.goto('file://' + path.resolve(plotHtml));
    await plot.waitForFunction(() => window.footprintPlot && window.footprintPlot.ready);
    await plot.screenshot({path: path.join(out, 'plot.png')});
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack || e) + '\n');
  process.exit(1);
});
