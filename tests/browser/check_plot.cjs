// Opens a footprint plot page in headless Chromium (Debian's, through playwright-core; no
// browser is downloaded) and prints, as JSON on stdout, what the page drew:
//   node check_plot.cjs PAGE.html OUT_DIR
// {charts: window.footprintPlot.describe(), constants: the series folded into a number,
//  console: [...], requests: [...],
//  folded: {before: [chart titles before the fold is opened], fold: its summary},
//  downloads: {png, svg, json, csv: {file, size}}}; a screenshot is saved as OUT_DIR/page.png.
// Environment: CHROMIUM (default /usr/bin/chromium); NODE_PATH must reach playwright-core
// (the build's web/node_modules). Used by test_plot_browser.py.
'use strict';
const fs = require('fs');
const path = require('path');
const {launchChromium} = require('./chromium.cjs');

async function main() {
  const [pagePath, outDir] = process.argv.slice(2);
  const browser = await launchChromium();
  try {
    const context = await browser.newContext({viewport: {width: 1280, height: 1000},
                                              acceptDownloads: true});
    const page = await context.newPage();
    const consoleMessages = [];
    const requests = [];
    page.on('console', (m) => consoleMessages.push({type: m.type(), text: m.text()}));
    page.on('pageerror', (e) => consoleMessages.push({type: 'pageerror', text: String(e)}));
    page.on('request', (r) => requests.push(r.url()));
    await page.goto('file://' + path.resolve(pagePath));
    // Ready, or failed: a script error stops the wait at once.
    await Promise.race([
      page.waitForFunction(() => window.footprintPlot && window.footprintPlot.ready, null,
                           {timeout: 60000}),
      new Promise((resolve, reject) => page.on('pageerror', (e) => reject(e))),
    ]);
    // footprint's own and the machine's charts are folded: drawn when opened.
    const folded = await page.evaluate(() => ({
      before: window.footprintPlot.describe().map((c) => c.title),
      fold: document.querySelector('.fp-fold > summary') &&
          document.querySelector('.fp-fold > summary').textContent,
    }));
    await page.click('.fp-fold > summary');
    // The fold draws on its 'toggle' event, which the browser fires as a task of its own after
    // the click (Chromium 156 runs it after the click's promise resolves).
    await page.waitForFunction((n) => window.footprintPlot.describe().length > n,
                               folded.before.length, {timeout: 30000});
    const charts = await page.evaluate(() => window.footprintPlot.describe());
    await page.screenshot({path: path.join(outDir, 'page.png')});

    // Saving: PNG, SVG and JSON of the first chart, CSV of the first time series.
    const downloads = {};
    const timeseries = charts.find((c) => c.kind === 'timeseries');
    const jobs = [['png', charts[0] && charts[0].id], ['svg', charts[0] && charts[0].id],
                  ['json', charts[0] && charts[0].id], ['csv', timeseries && timeseries.id]];
    for (const [kind, id] of jobs) {
      if (!id) continue;
      const [download] = await Promise.all([
        page.waitForEvent('download', {timeout: 30000}),
        page.evaluate(([i, k]) => window.footprintPlot.save(i, k), [id, kind]),
      ]);
      const file = path.join(outDir, 'saved.' + kind);
      await download.saveAs(file);
      downloads[kind] = {file: file, size: fs.statSync(file).size,
                         name: download.suggestedFilename()};
    }

    // Legend filtering: hiding the first series of the first time series chart.
    let legend = null;
    if (timeseries && timeseries.series.length) {
      legend = await page.evaluate(([id, name]) => {
        const chart = echarts.getInstanceByDom(document.getElementById(id));
        chart.dispatchAction({type: 'legendUnSelect', name: name});
        return chart.getOption().legend[0].selected;
      }, [timeseries.id, timeseries.series[0].name]);
    }
    // Tooltips of the charts with custom formatters (bars, heat maps) show names from the
    // database: hovering each data item must not turn a hostile name into markup.
    const tooltips = [];
    for (const c of charts.filter((c) => ['scopes', 'totals', 'confusion'].includes(c.kind))) {
      for (let s = 0; s < c.series.length; ++s) {
        const html = await page.evaluate(([id, series]) => {
          const chart = echarts.getInstanceByDom(document.getElementById(id));
          chart.dispatchAction({type: 'showTip', seriesIndex: series, dataIndex: 0});
          const tip = document.getElementById(id).querySelector('div[class^="echarts-tooltip"], div[style*="z-index: 9999999"]');
          return tip ? tip.innerHTML : null;
        }, [c.id, s]);
        if (html !== null) tooltips.push(html);
      }
    }
    const injected = await page.evaluate(() => window.__injected === true);
    const constants = await page.evaluate(() => window.footprintPlot.constants());
    process.stdout.write(JSON.stringify({charts, constants, folded, console: consoleMessages,
                                         requests, downloads, legend, tooltips, injected}) + '\n');
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack || e) + '\n');
  process.exit(1);
});
