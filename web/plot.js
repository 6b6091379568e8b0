// footprint plot: builds the page's charts from the JSON that footprint embedded (#fp-data)
// with Apache ECharts and web/charts.js (both embedded too). Plain JavaScript, no build step;
// see docs/plot.md.
//
// For tests and scripts, window.footprintPlot holds the data, the charts, describe(), which
// reads back from each live chart the series it draws and how many points each has, and
// save(id, 'png' | 'svg' | 'csv' | 'json') and unfold() (draws the folded monitor.*/sys.* charts).
(function () {
  'use strict';

  const data = JSON.parse(document.getElementById('fp-data').textContent);
  const main = document.getElementById('fp-charts');
  const actions = document.getElementById('fp-actions');
  const runs = data.runs;
  const fc = window.FootprintCharts;
  const download = fc.download;
  const view = fc.createView(data, main);
  const charts = view.charts;
  window.footprintPlot = {data: data, charts: charts, describe: view.describe, save: view.save,
                        unfold: view.unfold, constants: view.constants};

  // ---- the page -----------------------------------------------------------------------
  function header() {
    main.appendChild(fc.runsTable(runs));
    if (data.metrics.length) {
      const button = document.createElement('button');
      button.textContent = 'CSV of all samples';
      button.title = data.complete_csv ? 'every sample of the plotted series'
          : 'more samples than --raw-limit: the drawn points (footprint export writes them all)';
      button.addEventListener('click', function () {
        download('footprint-samples.csv', 'text/csv', view.metricsCsv(data.metrics));
      });
      actions.appendChild(button);
    }
    const note = document.createElement('p');
    note.className = 'fp-note';
    note.textContent = 'footprint ' + data.footprint + ' · ' + data.library + ' · ' + data.db +
        ' · drag or scroll a chart to zoom, click legend entries to hide series, hover for values' +
        (data.complete_csv ? '' : ' · CSV downloads hold the drawn points (more samples than ' +
                             '--raw-limit); footprint export writes every sample');
    main.appendChild(note);
  }

  header();
  view.render();
  if (!charts.length) {
    const empty = document.createElement('p');
    empty.textContent = 'Nothing to draw: the selected runs have no samples, values or totals.';
    main.appendChild(empty);
  }
  window.addEventListener('resize', view.resize);
  window.footprintPlot.ready = true;
})();
