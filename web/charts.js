// footprint's charts: builds the charts of one plot document (the JSON that footprint plot
// embeds in its page and that footprint serve's /api/plot returns; docs/plot.md) with Apache
// ECharts. Shared by the plot page (web/plot.js) and the web UI (web/serve.js), so both draw
// the same charts. Plain JavaScript, no build step.
//
// FootprintCharts.createView(data, main) draws into the element `main` and returns the view:
// {data, charts, render(), unfold(), describe(), save(id, kind), metricsCsv(metrics),
// appendLive(live, run), dispose()}. render() draws the program's values, scopes and metrics
// first; footprint's own (monitor.*) and the machine's (sys.*) series go into a fold, drawn
// when it is first opened (or by unfold()). describe() reads back from each live chart the
// series it draws, how many points each has and its largest value (for tests and scripts). Every string from the data reaches the page as text:
// ECharts draws titles, legends and labels on a canvas, and the tooltip formatters below escape
// what they put into HTML.
(function () {
  'use strict';

  const palette = ['#5470c6', '#ee6666', '#91cc75', '#fac858', '#73c0de', '#3ba272',
                   '#fc8452', '#9a60b4', '#ea7ccc', '#2f4554', '#c23531', '#61a0a8'];
  const lineTypes = ['solid', 'dashed', 'dotted'];

  // ---- numbers for people -------------------------------------------------------------
  function scaled(v, base, units) {
    let i = 0;
    let x = Math.abs(v);
    while (x >= base && i < units.length - 1) { x /= base; v /= base; i++; }
    return (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2)) +
        ' ' + units[i];
  }
  function format(unit, v) {
    if (v === null || v === undefined || Number.isNaN(v)) return '-';
    switch (unit) {
      case 'bytes': return scaled(v, 1024, ['B', 'KiB', 'MiB', 'GiB', 'TiB']);
      case 'bytes/s': return scaled(v, 1024, ['B/s', 'KiB/s', 'MiB/s', 'GiB/s']);
      case 's':
        if (v === 0) return '0 s';
        if (Math.abs(v) < 1e-3) return (v * 1e6).toFixed(1) + ' µs';
        if (Math.abs(v) < 1) return (v * 1e3).toFixed(1) + ' ms';
        return v.toFixed(v < 100 ? 2 : 0) + ' s';
      case '%': return v.toFixed(1) + ' %';
      case '':
      case 'count': return String(Math.round(v * 1e6) / 1e6);
      default: return (Math.round(v * 1e4) / 1e4) + ' ' + unit;
    }
  }
  // The labels of a whole axis in one scale, the one its largest value calls for, so that its
  // ticks read alike: "0.50 s, 1.00 s, 1.50 s" rather than "500.0 ms, 1.00 s, 1.50 s".
  function axisFormatter(unit, values) {
    let max = 0;
    values.forEach(function (v) { if (Number.isFinite(v)) max = Math.max(max, Math.abs(v)); });
    let scales = null;  // [divisor, name], smallest first
    if (unit === 's') scales = [[1e-6, 'µs'], [1e-3, 'ms'], [1, 's']];
    if (unit === 'bytes' || unit === 'bytes/s') {
      const suffix = unit === 'bytes' ? '' : '/s';
      scales = ['B', 'KiB', 'MiB', 'GiB', 'TiB'].map(function (n, k) {
        return [Math.pow(1024, k), n + suffix];
      });
    }
    if (!scales) return function (v) { return format(unit, v); };
    let pick = scales[0];
    scales.forEach(function (s) { if (max >= s[0]) pick = s; });
    const top = max / pick[0];
    const decimals = top >= 100 ? 0 : top >= 10 ? 1 : 2;
    return function (v) {
      return v === 0 ? '0 ' + pick[1] : (v / pick[0]).toFixed(decimals) + ' ' + pick[1];
    };
  }
  function colorOf(run) { return palette[run % palette.length]; }
  // A colour per group of repetitions (a run alone is a group of its own), so that ten runs of
  // two groups read as two colours; a group's runs differ by line type.
  function groupColours(runs) {
    const index = {};
    return runs.map(function (r) {
      const key = r.group_id ? 'g' + r.group_id : 'r' + r.id;
      if (!(key in index)) index[key] = Object.keys(index).length;
      return palette[index[key] % palette.length];
    });
  }
  // A run total's name for people, as footprint compare labels it (FigureLabel): "peak memory",
  // not peak_memory_bytes; the unit goes to the axis.
  const totalLabels = {duration_s: 'duration', cpu_s: 'cpu time', cpu_user_s: 'cpu user',
                       cpu_system_s: 'cpu system', max_process_peak_bytes: 'largest process',
                       monitor_cpu_s: 'footprint cpu', monitor_peak_rss_bytes: 'footprint rss'};
  function totalLabel(name) {
    if (totalLabels[name]) return totalLabels[name];
    return name.replace(/_(s|bytes|j|w)$/, '').replace(/_/g, ' ');
  }
  // footprint's own cost (its monitor's CPU and memory): never one of the program's figures.
  function isOwnTotal(name) { return /^monitor_/.test(name); }
  // A run's status as people read it: samples lost to the database make it incomplete.
  function statusText(run) {
    return run.incomplete ? run.status + ', incomplete: ' + run.incomplete : run.status;
  }
  function fade(hex, alpha) {
    const n = parseInt(hex.slice(1), 16);
    return 'rgba(' + (n >> 16) + ',' + ((n >> 8) & 255) + ',' + (n & 255) + ',' + alpha + ')';
  }
  // The table of the runs drawn, one row each: colour, label (its id in the tooltip), status,
  // start, duration, command (cut by the page's CSS; the whole text is the cell's tooltip).
  // Shared by the plot page and the web UI. Text only, never markup.
  function runsTable(runs) {
    const table = document.createElement('table');
    table.className = 'fp-runs';
    const cell = function (tr, tag, text) {
      const c = document.createElement(tag);
      if (text !== null) c.textContent = text;
      tr.appendChild(c);
      return c;
    };
    const head = document.createElement('tr');
    ['', 'run', 'status', 'started (UTC)', 'duration', 'command'].forEach(function (h) {
      cell(head, 'th', h);
    });
    table.appendChild(head);
    const colours = groupColours(runs);
    runs.forEach(function (r, i) {
      const tr = document.createElement('tr');
      const swatch = document.createElement('span');
      swatch.className = 'fp-swatch';
      swatch.style.background = colours[i];
      cell(tr, 'td', null).appendChild(swatch);
      [r.label, statusText(r), new Date(r.started_ms).toISOString().replace('T', ' ').slice(0, 19),
       format('s', r.duration_s), r.command].forEach(function (text) {
        cell(tr, 'td', text).title = text === r.label ? text + ' (' + r.id + ')' : text;
      });
      tr.dataset.status = r.status;
      table.appendChild(tr);
    });
    return table;
  }
  function fileStem(text) { return text.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 80); }

  // ---- downloads ----------------------------------------------------------------------
  function download(name, type, text) {
    const url = URL.createObjectURL(new Blob([text], {type: type}));
    const a = document.createElement('a');
    a.href = url;
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  }
  function csvField(s) {
    s = String(s);
    return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }
  function escapeHtml(text) {
    return String(text).replace(/[&<>"']/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c];
    });
  }

  const icons = {
    png: 'path://M3,5H21V19H3Z M3,16L9,10L13,14L16,11L21,16 M15,8.5A1.5,1.5,0,1,0,15.01,8.5',
    svg: 'path://M5,2H14L19,7V22H5Z M14,2V7H19 M8,12H16 M8,16H16',
    csv: 'path://M3,4H21V20H3Z M3,9H21 M3,14H21 M9,4V20 M15,4V20',
    json: 'path://M9,3C5,3 7,11 3,12C7,13 5,21 9,21 M15,3C19,3 17,11 21,12C17,13 19,21 15,21',
  };
  // footprint's own figures and the machine's: drawn last, in a fold closed by default, so
  // that the program's values, scopes and metrics come first.
  function isOwnMetric(name) { return /^(monitor|sys)\./.test(name); }
  function createView(data, main) {
    const runs = data.runs;
    let colours = groupColours(runs);
    const colour = function (run) { return colours[run]; };
    const charts = [];
    let constantsBox = null;  // the list of series folded into a number
    let into = main;     // where addChart puts the next chart
    let foldBody = null;  // the fold's content, and its charts not drawn yet
    let folded = [];

    // CSV of sampled metrics: full resolution where the page holds it (docs/plot.md).
    function metricsCsv(metrics) {
      const rows = ['run_id,run_name,metric,unit,entity,t_s,value'];
      let partial = false;
      for (const m of metrics) {
        for (const s of m.series) {
          const r = runs[s.run];
          let t = s.t;
          let v = s.v;
          if (s.raw && s.raw !== true) { t = s.raw.t; v = s.raw.v; }
          if (!s.raw) partial = true;
          const head = [r.id, r.name, m.name, m.unit, s.entity].map(csvField).join(',');
          for (let i = 0; i < t.length; i++) rows.push(head + ',' + t[i] + ',' + v[i]);
        }
      }
      if (partial) {
        rows.unshift('# downsampled: this plot holds more samples than --raw-limit; ' +
                     'footprint export -u RUN --format csv writes every sample');
      }
      return rows.join('\n') + '\n';
    }

    // Toolbox buttons every chart has: zoom, restore, PNG, SVG, CSV where there are samples, and
    // JSON. The same saving functions are view.save(id, 'png' | 'svg' | 'csv' | 'json').
    function savePng(entry) {
      const url = entry.chart.getDataURL({type: 'png', pixelRatio: 2, backgroundColor: '#fff',
                                          excludeComponents: ['toolbox', 'dataZoom']});
      const a = document.createElement('a');
      a.href = url;
      a.download = fileStem(entry.title) + '.png';
      document.body.appendChild(a);
      a.click();
      a.remove();
    }
    // SVG: the same option drawn once more by ECharts' SVG renderer, off screen.
    function saveSvg(entry) {
      const svg = echarts.init(null, null, {renderer: 'svg', ssr: true,
                                            width: entry.element.clientWidth || 900,
                                            height: entry.element.clientHeight || 420});
      const option = entry.chart.getOption();
      option.animation = false;
      option.toolbox = [];
      option.dataZoom = (option.dataZoom || []).filter(function (z) { return z.type === 'inside'; });
      svg.setOption(option);
      download(fileStem(entry.title) + '.svg', 'image/svg+xml', svg.renderToSVGString());
      svg.dispose();
    }
    // The chart's data as it draws it: each series' name and points, the categories of a
    // category axis, and the runs.
    function saveJson(entry) {
      const option = entry.chart.getOption();
      const axis = (option.xAxis || [])[0];
      const doc = {
        title: entry.title, kind: entry.kind,
        runs: runs.map(function (r) { return {id: r.id, label: r.label}; }),
        categories: axis && axis.type === 'category' ? axis.data : null,
        unit: entry.metric ? entry.metric.unit : null,
        series: (option.series || []).map(function (s) {
          return {name: s.name, type: s.type, data: s.data};
        }),
      };
      download(fileStem(entry.title) + '.json', 'application/json', JSON.stringify(doc, null, 1));
    }
    function save(id, kind) {
      const entry = charts.find(function (c) { return c.id === id; });
      if (!entry) throw new Error('no chart ' + id);
      if (kind === 'png') return savePng(entry);
      if (kind === 'svg') return saveSvg(entry);
      if (kind === 'json') return saveJson(entry);
      if (kind === 'csv' && entry.csv) return entry.csv();
      throw new Error('chart ' + id + ' cannot be saved as ' + kind);
    }
    function toolbox(entry, zoom) {
      const feature = {};
      if (zoom) feature.dataZoom = {yAxisIndex: 'none', title: {zoom: 'zoom', back: 'undo zoom'}};
      feature.restore = {title: 'restore'};
      feature.myPng = {show: true, title: 'save PNG', icon: icons.png,
                       onclick: function () { savePng(entry); }};
      feature.mySvg = {show: true, title: 'save SVG', icon: icons.svg,
                       onclick: function () { saveSvg(entry); }};
      if (entry.csv) {
        feature.myCsv = {show: true, title: 'download CSV', icon: icons.csv,
                         onclick: function () { entry.csv(); }};
      }
      feature.myJson = {show: true, title: 'download JSON', icon: icons.json,
                        onclick: function () { saveJson(entry); }};
      return {right: 10, top: 6, feature: feature};
    }

    // ---- charts -------------------------------------------------------------------------
    // `csv`: a function that downloads the chart's data, or null.
    // A chart of the same kind and title drawn before (refresh()) is updated in place.
    function addChart(kind, title, option, height, csv) {
      const old = charts.find(function (c) { return c.kind === kind && c.title === title; });
      option.animation = false;
      option.title = Object.assign({text: title, left: 10, top: 6, textStyle: {fontSize: 15}},
                                   option.title || {});
      if (old) {
        option.toolbox = toolbox(old, !!option.dataZoom);
        old.chart.setOption(option, {notMerge: true});
        return old;
      }
      const box = document.createElement('section');
      box.className = 'fp-chart';
      box.dataset.kind = kind;
      const element = document.createElement('div');
      element.className = 'fp-canvas';
      element.id = 'chart-' + charts.length;
      element.style.height = (height || 420) + 'px';
      box.appendChild(element);
      into.appendChild(box);
      const chart = echarts.init(element, null, {renderer: 'canvas'});
      const entry = {id: element.id, kind: kind, title: title, chart: chart, element: element,
                     csv: csv || null};
      option.toolbox = toolbox(entry, !!option.dataZoom);
      chart.setOption(option);
      charts.push(entry);
      return entry;
    }
    // The labels of a value axis's ticks as drawn (none for a category axis).
    function axisLabels(chart, which) {
      const axis = chart.getModel().getComponent(which, 0);
      if (!axis || axis.get('type') !== 'value') return [];
      return axis.axis.getViewLabels().map(function (l) { return l.formattedLabel; });
    }

    function describe() {
      return charts.map(function (c) {
        const option = c.chart.getOption();
        return {
          id: c.id, kind: c.kind, title: c.title,
          series: (option.series || []).map(function (s) {
            const ys = (s.data || []).map(function (p) { return Array.isArray(p) ? p[1] : p; })
                .filter(Number.isFinite);
            return {name: s.name, type: s.type, points: (s.data || []).length,
                    max: ys.length ? Math.max.apply(null, ys) : null,
                    bands: s.markArea && s.markArea.data ? s.markArea.data.length : 0,
                    windows: (s.markArea && s.markArea.data ? s.markArea.data : [])
                        .filter(function (b) { return isProfileWindow(b[0].name); })
                        .map(function (b) { return [b[0].name, b[0].xAxis, b[1].xAxis]; })};
          }),
          axisLabels: {x: axisLabels(c.chart, 'xAxis'), y: axisLabels(c.chart, 'yAxis')},
        };
      });
    }

    // A profiler window (footprint.profile, run --profile) stands out from the other scopes:
    // its steps ran under the profiler, slower than the rest.
    function isProfileWindow(name) { return /^profile:/.test(name); }
    const profileWindowStyle = {color: 'rgba(230, 120, 0, 0.22)', borderColor: '#e67800',
                                borderWidth: 1, borderType: 'dashed'};
    function bandsOf(run) {
      const entry = data.bands.find(function (b) { return b.run === run; });
      return entry ? entry.bands : [];
    }

    // The parts of a multi-host run (runs with a `span`) are drawn a line per host, on the
    // time of the earliest part: each host's series is shifted by how much later its part
    // started. Each metric also gets their sum, one line per kind of series (the tree's, the
    // machine's): at every time any host sampled, each host's latest value, a host counting
    // from its first sample to its last.
    const spanStart = {};
    runs.forEach(function (r) {
      if (r.span) spanStart[r.span] = Math.min(spanStart[r.span] || Infinity, r.started_ms);
    });
    function offsetOf(run) {
      const r = runs[run];
      return r.span ? (r.started_ms - spanStart[r.span]) / 1000 : 0;
    }

    function hostSums(m) {
      const groups = new Map();
      m.series.forEach(function (s) {
        const r = runs[s.run];
        if (!r.span) return;
        const kind = s.entity === r.host ? '' : s.entity.split('@' + r.host).join('');
        const key = JSON.stringify([r.span, kind]);
        if (!groups.has(key)) groups.set(key, {run: s.run, kind: kind, members: []});
        groups.get(key).members.push(s);
      });
      const sums = [];
      groups.forEach(function (g) {
        if (g.members.length < 2) return;
        const shifted = g.members.map(function (s) {
          const offset = offsetOf(s.run);
          return s.t.map(function (t) { return t + offset; });
        });
        const times = Array.from(new Set([].concat.apply([], shifted))).sort(function (a, b) {
          return a - b;
        });
        const at = g.members.map(function () { return -1; });
        const points = times.map(function (t) {
          let sum = 0;
          g.members.forEach(function (s, k) {
            const ts = shifted[k];
            while (at[k] + 1 < ts.length && ts[at[k] + 1] <= t) at[k]++;
            if (at[k] >= 0 && t <= ts[ts.length - 1] && Number.isFinite(s.v[at[k]])) {
              sum += s.v[at[k]];
            }
          });
          return [t, sum];
        });
        sums.push({
          name: runs[g.run].name + ' · sum of ' + g.members.length + ' hosts' +
              (g.kind ? ' ' + g.kind : ''),
          type: 'line', data: points, showSymbol: false, color: '#333',
          lineStyle: {width: 2.2}, emphasis: {focus: 'series'},
        });
      });
      return sums;
    }

    // A metric whose every series holds one value throughout (all zeros, a fixed thread count)
    // says it in a line of the constants list rather than a full-size chart. A running run's
    // series may still move: they stay charts.
    function isConstant(m) {
      return m.series.length > 0 && m.series.every(function (s) {
        return runs[s.run].status !== 'running' && s.v.length > 0 && s.v.every(function (v) { return v === s.v[0]; });
      });
    }
    function constantText(unit, v) { return v === 0 ? '0' : format(unit, v); }
    function showConstant(m) {
      if (!constantsBox) {
        constantsBox = document.createElement('ul');
        constantsBox.className = 'fp-constants';
        constantsBox.title = 'series that held one value throughout: a number, not a chart';
        main.insertBefore(constantsBox, main.firstChild);
      }
      const values = Array.from(new Set(m.series.map(function (s) { return s.v[0]; })));
      const text = m.name + ': ' + (values.length === 1
          ? constantText(m.unit, values[0]) + (m.series.length > 1 ? ' in every series' : '')
          : m.series.map(function (s) {
            return runs[s.run].label + ' ' + constantText(m.unit, s.v[0]);
          }).join(', ')) + ' (constant)';
      let li = constantsBox.querySelector('li[data-metric="' + CSS.escape(m.name) + '"]');
      if (!li) {
        li = document.createElement('li');
        li.dataset.metric = m.name;
        constantsBox.appendChild(li);
      }
      li.textContent = text;
    }
    function constants() {
      return constantsBox ? Array.from(constantsBox.children).map(function (li) {
        return {metric: li.dataset.metric, text: li.textContent};
      }) : [];
    }

    function timeSeriesChart(m) {
      if (isConstant(m)) {
        const drawn = charts.some(function (c) { return c.kind === 'timeseries' && c.metric && c.metric.name === m.name; });
        if (!drawn) { showConstant(m); return; }  // a chart drawn already stays one
      }
      const chip = constantsBox && constantsBox.querySelector('li[data-metric="' + CSS.escape(m.name) + '"]');
      if (chip) chip.remove();
      const entities = new Set(m.series.map(function (s) { return s.entity; }));
      const perRun = {};
      const withBands = new Set();
      const series = m.series.map(function (s) {
        const index = perRun[s.run] = (perRun[s.run] || 0) + 1;
        const name = runs[s.run].label + (entities.size > 1 ? ' ' + s.entity : '');
        const points = new Array(s.t.length);
        const offset = offsetOf(s.run);
        for (let i = 0; i < s.t.length; i++) points[i] = [s.t[i] + offset, s.v[i]];
        const out = {
          name: name, type: 'line', data: points, showSymbol: false, symbolSize: 4,
          color: colour(s.run), lineStyle: {width: 1.4, type: lineTypes[(index - 1) % 3]},
          emphasis: {focus: 'series'},
        };
        // The run's scopes as bands, on its first series (hidden with it from the legend).
        const bands = bandsOf(s.run);
        if (bands.length && !withBands.has(s.run)) {
          withBands.add(s.run);
          out.markArea = {
            silent: false,
            itemStyle: {color: fade(colour(s.run), 0.10), borderColor: fade(colour(s.run), 0.4),
                        borderWidth: 0.5},
            label: {show: true, position: 'insideTopLeft', color: '#444', fontSize: 10},
            data: bands.map(function (b) {
              const start = {name: b.name + (b.open ? ' (unfinished)' : ''), xAxis: b.start};
              if (isProfileWindow(b.name)) start.itemStyle = profileWindowStyle;
              return [start, {xAxis: b.end}];
            }),
          };
        }
        return out;
      }).concat(hostSums(m));
      const downsampled = m.series.filter(function (s) { return s.count > s.t.length; });
      let subtext = '';
      if (downsampled.length) {
        subtext = downsampled.length + ' of ' + m.series.length + ' series downsampled to ≤ ' +
            data.max_points + ' points (LTTB; largest: ' +
            Math.max.apply(null, downsampled.map(function (s) { return s.count; })).toLocaleString() +
            ' samples)';
      }
      const title = m.name + (m.unit ? ' (' + m.unit + ')' : '');
      const entry = addChart('timeseries', title, {
        title: {subtext: subtext},
        tooltip: {
          trigger: 'axis',
          axisPointer: {type: 'cross', label: {formatter: function (p) {
            return p.axisDimension === 'x' ? format('s', p.value) : format(m.unit, p.value);
          }}},
          valueFormatter: function (v) { return format(m.unit, v); },
        },
        legend: {type: 'scroll', top: subtext ? 48 : 32, left: 10, right: 160},
        grid: {left: 80, right: 30, top: subtext ? 86 : 70, bottom: 90},
        dataZoom: [{type: 'inside', filterMode: 'none'}, {type: 'slider', filterMode: 'none',
                                                           bottom: 12}],
        xAxis: {type: 'value', name: 'time since run start', nameLocation: 'middle',
                nameGap: 26, min: 0, axisLabel: {formatter: axisFormatter('s', [].concat.apply(
                    [], m.series.map(function (s) { return s.t; })))}},
        yAxis: {type: 'value', scale: false, axisLabel: {formatter: axisFormatter(m.unit, [].concat
                    .apply([], m.series.map(function (s) { return s.v; })))}},
        series: series,
      }, 420, function () {
        download(fileStem(m.name) + '.csv', 'text/csv', metricsCsv([m]));
      });
      entry.metric = m;
      entry.points = series.map(function (s) { return s.data; });
    }

    function byRunBars(kind, title, categories, unit, valueOf, tooltipOf) {
      const values = [];
      runs.forEach(function (r, i) {
        categories.forEach(function (c, j) { values.push(valueOf(i, j)); });
      });
      addChart(kind, title, {
        tooltip: {
          trigger: 'item',
          formatter: function (p) {
            return escapeHtml(p.seriesName) + '<br>' + escapeHtml(p.name) + ': <b>' +
                format(unit, p.value) + '</b>' +
                (tooltipOf ? tooltipOf(p.seriesIndex, p.dataIndex) : '');
          },
        },
        legend: {type: 'scroll', top: 32, left: 10, right: 160},
        grid: {left: 80, right: 30, top: 70, bottom: 60, containLabel: true},
        xAxis: {type: 'category', data: categories, axisLabel: {interval: 0, rotate: categories.length > 6 ? 30 : 0}},
        yAxis: {type: 'value', axisLabel: {formatter: axisFormatter(unit, values)}},
        series: runs.map(function (r, i) {
          return {
            name: r.label, type: 'bar', color: colour(i), emphasis: {focus: 'series'},
            data: categories.map(function (c, j) { const v = valueOf(i, j); return v === null ? '-' : v; }),
          };
        }),
      });
    }

    function scopeBars() {
      if (!data.scopes.length) return;
      byRunBars('scopes', 'Scope durations (total per name)',
                data.scopes.map(function (s) { return s.name; }), 's',
                function (run, j) {
                  const e = data.scopes[j].runs[run];
                  return e ? e.total_s : null;
                },
                function (run, j) {
                  const e = data.scopes[j].runs[run];
                  if (!e) return '';
                  return '<br>' + e.count + '× mean ' + format('s', e.mean_s) +
                      (e.unfinished ? '<br>' + e.unfinished + ' never ended' : '');
                });
    }

    function totalBars() {
      const titles = {s: 'Run totals: time', bytes: 'Run totals: memory and I/O',
                      J: 'Run totals: energy', count: 'Run totals: counts'};
      const kinds = [];  // [unit, own]
      for (const t of data.totals) {
        const own = isOwnTotal(t.name);
        if (!kinds.some(function (k) { return k[0] === t.unit && k[1] === own; })) kinds.push([t.unit, own]);
      }
      for (const [unit, own] of kinds) {
        const totals = data.totals.filter(function (t) {
          return t.unit === unit && isOwnTotal(t.name) === own;
        });
        const title = own ? "footprint's own cost (" + unit + '; not your program\'s)'
            : titles[unit] || 'Run totals (' + unit + ')';
        const labels = totals.map(function (t) { return totalLabel(t.name); });
        const valueOf = function (run, j) { return totals[j].runs[run]; };
        if (repeated()) groupBoxes('totals', title, labels, unit, valueOf);
        else byRunBars('totals', title, labels, unit, valueOf);
      }
    }

    // The sets of the runs drawn: a group's runs together, a run alone by itself.
    function runSets() {
      const sets = [];
      const index = {};
      runs.forEach(function (r, i) {
        const key = r.group_id ? 'g' + r.group_id : 'r' + r.id;
        if (!(key in index)) {
          index[key] = sets.length;
          sets.push({label: r.group_id ? r.name + ' (group ' + r.group_id.slice(0, 8) + ')' : r.label,
                     runs: []});
        }
        sets[index[key]].runs.push(i);
      });
      return sets;
    }
    function repeated() { return runSets().some(function (s) { return s.runs.length > 1; }); }

    // Repetitions as a box per group (min, quartiles, max), so that the spread of a group reads
    // at a glance; a run alone is a line.
    function groupBoxes(kind, title, categories, unit, valueOf) {
      const sets = runSets();
      const values = [];
      const quantile = function (sorted, q) {
        const at = (sorted.length - 1) * q;
        const lo = Math.floor(at);
        return sorted[lo] + (sorted[Math.min(lo + 1, sorted.length - 1)] - sorted[lo]) * (at - lo);
      };
      addChart(kind, title, {
        tooltip: {trigger: 'item', formatter: function (p) {
          const v = p.value.slice(-5);
          return escapeHtml(p.seriesName) + '<br>' + escapeHtml(p.name) + ': median <b>' +
              format(unit, v[2]) + '</b><br>' + format(unit, v[0]) + ' to ' + format(unit, v[4]);
        }},
        legend: {type: 'scroll', top: 32, left: 10, right: 160},
        grid: {left: 80, right: 30, top: 70, bottom: 60, containLabel: true},
        xAxis: {type: 'category', data: categories,
                axisLabel: {interval: 0, rotate: categories.length > 6 ? 30 : 0}},
        yAxis: {type: 'value', axisLabel: {formatter: axisFormatter(unit, values)}},
        series: sets.map(function (set) {
          return {
            name: set.label, type: 'boxplot', color: colour(set.runs[0]),
            itemStyle: {color: fade(colour(set.runs[0]), 0.25), borderColor: colour(set.runs[0])},
            data: categories.map(function (c, j) {
              const v = set.runs.map(function (run) { return valueOf(run, j); })
                  .filter(Number.isFinite).sort(function (a, b) { return a - b; });
              v.forEach(function (x) { values.push(x); });
              return v.length ? [v[0], quantile(v, 0.25), quantile(v, 0.5), quantile(v, 0.75),
                                 v[v.length - 1]] : '-';
            }),
          };
        }),
      });
    }

    function curveChart(c) {
      const title = c.name + ' by ' + c.x;
      addChart('curve', title, {
        tooltip: {trigger: 'axis'},
        legend: {type: 'scroll', top: 32, left: 10, right: 160},
        grid: {left: 80, right: 30, top: 70, bottom: 90},
        dataZoom: [{type: 'inside', filterMode: 'none'}, {type: 'slider', filterMode: 'none', bottom: 12}],
        xAxis: {type: 'value', name: c.x === 'step' ? 'step' : 'time since run start (s)',
                nameLocation: 'middle', nameGap: 26, minInterval: c.x === 'step' ? 1 : 0},
        // Values carry no unit, but a load's latencies are seconds.
        yAxis: c.name === 'load.latency'
            ? {type: 'value', axisLabel: {formatter: axisFormatter('s', [].concat.apply(
                  [], c.series.map(function (s) { return s.y; })))}}
            : {type: 'value', scale: true},
        series: c.series.map(function (s) {
          return {
            name: runs[s.run].label, type: 'line', color: colour(s.run), symbolSize: 5,
            showSymbol: s.x.length <= 200, emphasis: {focus: 'series'},
            data: s.x.map(function (x, i) { return [x, s.y[i]]; }),
          };
        }),
      });
    }

    // A load's latencies by percentile (footprint load's per-query values), on an axis where
    // each nine takes the same room, as HdrHistogram draws it: x = -log10(1 - p), so p90 is
    // at 1, p99 at 2, p99.9 at 3. The i-th smallest of n latencies holds from p = i/n on.
    function percentileChart(c) {
      let top = 1;
      const all = [];
      const series = c.series.map(function (s) {
        const sorted = s.y.filter(Number.isFinite).sort(function (a, b) { return a - b; });
        const points = sorted.map(function (v, i) {
          const x = -Math.log10(1 - i / sorted.length);
          top = Math.max(top, x);
          all.push(v);
          return [x, v];
        });
        return {name: runs[s.run].label, type: 'line', step: 'end', showSymbol: false,
                color: colour(s.run), emphasis: {focus: 'series'}, data: points};
      });
      const percentile = function (x) {
        return 'p' + Math.round(1e4 * (1 - Math.pow(10, -x))) / 100;
      };
      addChart('percentiles', c.name + ' by percentile', {
        tooltip: {trigger: 'axis', valueFormatter: function (v) { return format('s', v); },
                  axisPointer: {label: {formatter: function (p) {
                    return p.axisDimension === 'x' ? percentile(p.value) : format('s', p.value);
                  }}}},
        legend: {type: 'scroll', top: 32, left: 10, right: 160},
        grid: {left: 80, right: 30, top: 70, bottom: 60},
        xAxis: {type: 'value', min: 0, max: Math.ceil(top), interval: 1, name: 'percentile',
                nameLocation: 'middle', nameGap: 26, axisLabel: {formatter: percentile}},
        yAxis: {type: 'value', axisLabel: {formatter: axisFormatter('s', all)}},
        series: series,
      });
    }

    // Across load runs (a --qps sweep, say): the latency percentiles against the queries/s each
    // achieved, a point per run, as MLPerf's throughput-latency curves are drawn.
    function throughputLatencyChart() {
      const loads = runs.map(function (r, i) { return {run: i, load: r.load}; })
          .filter(function (x) { return x.load && Number.isFinite(x.load.qps) && x.load.qps > 0; })
          .sort(function (a, b) { return a.load.qps - b.load.qps; });
      if (loads.length < 2) return;
      const all = [];
      const series = ['p50', 'p90', 'p99'].map(function (p) {
        return {
          name: p, type: 'line', symbolSize: 8, emphasis: {focus: 'series'},
          data: loads.filter(function (x) { return Number.isFinite(x.load[p]); }).map(function (x) {
            all.push(x.load[p]);
            return {value: [x.load.qps, x.load[p]], run: x.run};
          }),
        };
      });
      addChart('throughput-latency', 'load: latency by throughput', {
        tooltip: {trigger: 'item', formatter: function (p) {
          return escapeHtml(runs[p.data.run].label) + '<br>' + escapeHtml(p.seriesName) + ' <b>' +
              format('s', p.value[1]) + '</b> at ' + format('count', p.value[0]) + ' queries/s';
        }},
        legend: {top: 32, left: 10, right: 160},
        grid: {left: 80, right: 30, top: 70, bottom: 60},
        xAxis: {type: 'value', scale: true, name: 'queries/s achieved', nameLocation: 'middle',
                nameGap: 26},
        yAxis: {type: 'value', axisLabel: {formatter: axisFormatter('s', all)}},
        series: series,
      });
    }

    function confusionChart(c) {
      const title = c.name + ': ' + runs[c.run].label + (c.step !== null ? ' (step ' + c.step + ')' : '');
      const cells = [];
      let max = 0;
      c.matrix.forEach(function (row, i) {
        row.forEach(function (v, j) { cells.push([j, i, v]); max = Math.max(max, v); });
      });
      const labels = c.labels.map(String);
      const size = Math.max(320, Math.min(700, 140 + 36 * labels.length));
      addChart('confusion', title, {
        tooltip: {
          formatter: function (p) {
            return 'true ' + escapeHtml(labels[p.value[1]]) + ', predicted ' +
                escapeHtml(labels[p.value[0]]) + ': <b>' +
                p.value[2] + '</b>';
          },
        },
        grid: {left: 110, right: 110, top: 60, bottom: 70},
        xAxis: {type: 'category', data: labels, name: 'predicted', nameLocation: 'middle',
                nameGap: 30, splitArea: {show: true}},
        yAxis: {type: 'category', data: labels, name: 'true', nameLocation: 'middle', nameGap: 70,
                inverse: true, splitArea: {show: true}},
        visualMap: {min: 0, max: max || 1, calculable: true, orient: 'vertical', right: 10,
                    top: 'middle', inRange: {color: ['#f7fbff', '#6baed6', '#08306b']}},
        series: [{name: c.name, type: 'heatmap', data: cells,
                  label: {show: labels.length <= 20}, emphasis: {itemStyle: {borderColor: '#333'}}}],
      }, size);
    }

    function hyperparameterChart(h) {
      const title = h.name + ': ' + h.axes.join(', ') + ' → ' + h.target;
      const dims = h.axes.concat([h.target]);
      const categorical = dims.map(function (d, i) {
        if (i === h.axes.length) return null;
        const values = h.sets.map(function (s) { return s.params[d]; });
        if (values.every(function (v) { return typeof v === 'number' || v === undefined || v === null; })) return null;
        return Array.from(new Set(values.map(String)));
      });
      const parallelAxis = dims.map(function (d, i) {
        const axis = {dim: i, name: d + (i === h.axes.length ? (h.low_means_good ? ' (lower is better)' : ' (higher is better)') : '')};
        if (categorical[i]) { axis.type = 'category'; axis.data = categorical[i]; }
        // The better end of the target on top.
        if (i === h.axes.length) axis.inverse = h.low_means_good;
        return axis;
      });
      const byRun = {};
      for (const s of h.sets) (byRun[s.run] = byRun[s.run] || []).push(s);
      addChart('hyperparameters', title, {
        tooltip: {trigger: 'item'},
        legend: {type: 'scroll', top: 32, left: 10, right: 160},
        parallel: {left: 60, right: 120, top: 90, bottom: 40},
        parallelAxis: parallelAxis,
        series: Object.keys(byRun).map(function (run) {
          return {
            name: runs[run].label, type: 'parallel', color: colour(Number(run)),
            lineStyle: {width: 2, opacity: 0.75}, emphasis: {lineStyle: {width: 4, opacity: 1}},
            data: byRun[run].map(function (s) {
              return dims.map(function (d, i) {
                const v = i === h.axes.length ? s.value : s.params[d];
                return v === undefined || v === null ? '-' : (categorical[i] ? String(v) : v);
              });
            }),
          };
        }),
      });
    }

    let foldOpened = false;
    function render() {
      data.curves.forEach(function (c) {
        curveChart(c);
        if (c.name === 'load.latency') percentileChart(c);
      });
      throughputLatencyChart();
      scopeBars();
      data.metrics.forEach(function (m) { if (!isOwnMetric(m.name)) timeSeriesChart(m); });
      totalBars();
      data.confusion.forEach(confusionChart);
      data.hyperparameters.forEach(hyperparameterChart);
      const own = data.metrics.filter(function (m) { return isOwnMetric(m.name); });
      if (foldOpened) {
        into = foldBody;
        own.forEach(timeSeriesChart);
        into = main;
        return;
      }
      folded = own;
      if (folded.length && !foldBody) foldOwnMetrics();
    }

    // Takes a newer document of the same runs (a live run's values, scopes, totals, duration)
    // and updates every chart in place; charts it did not have before are added.
    function refresh(newer) {
      Object.keys(newer).forEach(function (k) { if (k !== 'runs') data[k] = newer[k]; });
      runs.splice.apply(runs, [0, runs.length].concat(newer.runs));
      colours = groupColours(runs);
      render();
    }

    function foldOwnMetrics() {
      const details = document.createElement('details');
      details.className = 'fp-fold';
      const summary = document.createElement('summary');
      summary.textContent = "footprint's own and the machine's series (" + folded.length +
          ' chart' + (folded.length > 1 ? 's' : '') + '): ' +
          folded.map(function (m) { return m.name; }).join(', ');
      details.appendChild(summary);
      foldBody = document.createElement('div');
      details.appendChild(foldBody);
      details.addEventListener('toggle', function () { if (details.open) unfold(); });
      main.appendChild(details);
    }
    // Draws the fold's charts (once) and opens it.
    function unfold() {
      if (!foldBody || foldOpened) return;
      foldBody.parentElement.open = true;
      foldOpened = true;
      into = foldBody;
      folded.forEach(timeSeriesChart);
      into = main;
      folded = [];
    }

    // Appends the new samples of a live run (the JSON of /api/live: metrics with series of the
    // points after the last ones drawn) to the time-series charts of run `run` (its index in
    // data.runs). Returns false when the run has series the view does not draw yet, so the
    // caller draws everything again.
    function appendLive(live, run) {
      let complete = true;
      const touched = new Set();
      for (const lm of live.metrics) {
        // A metric in the closed fold has no chart yet: its data grows, drawn when unfolded.
        const m = data.metrics.find(function (x) { return x.name === lm.name; });
        const entry = charts.find(function (c) { return c.kind === 'timeseries' && c.metric === m; });
        for (const ls of lm.series) {
          if (!ls.count) continue;
          const i = m ? m.series.findIndex(function (s) {
            return s.run === run && s.entity === ls.entity;
          }) : -1;
          if (i < 0) { complete = false; continue; }
          const s = m.series[i];
          if (s.raw !== true || ls.raw !== true) s.raw = false;  // points, not every sample
          s.end_ns = ls.end_ns;
          const last = s.t.length ? s.t[s.t.length - 1] : -Infinity;
          for (let k = 0; k < ls.t.length; k++) {
            if (ls.t[k] <= last) continue;  // drawn already
            s.t.push(ls.t[k]);
            s.v.push(ls.v[k]);
            if (entry) entry.points[i].push([ls.t[k] + offsetOf(run), ls.v[k]]);
            s.count++;
          }
          if (entry) touched.add(entry);
        }
      }
      touched.forEach(function (entry) {
        entry.chart.setOption({series: entry.points.map(function (p) { return {data: p}; })});
      });
      return complete;
    }

    function dispose() {
      charts.forEach(function (c) { c.chart.dispose(); });
      charts.length = 0;
    }

    return {data: data, charts: charts, render: render, refresh: refresh, unfold: unfold,
            describe: describe, constants: constants, save: save,
            metricsCsv: metricsCsv, appendLive: appendLive, dispose: dispose,
            resize: function () { charts.forEach(function (c) { c.chart.resize(); }); }};
  }

  window.FootprintCharts = {createView: createView, format: format, escapeHtml: escapeHtml,
                            download: download, csvField: csvField, colorOf: colorOf,
                            groupColours: groupColours, totalLabel: totalLabel,
                            isOwnTotal: isOwnTotal,
                            fileStem: fileStem, statusText: statusText, runsTable: runsTable};
})();
