// ftbench's HTML report: lays out the page and hands the figures ftbench computed (the
// ftbench-data block, docs/html-report.md) to Chart.js. Nothing here computes a figure: every
// plotted value is the report's; units change only in axis and tooltip labels.
// window.ftbench = {data, charts} and <html data-ftbench-ready> are what the browser test reads.
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('ftbench-data').textContent);
  const charts = {};
  window.ftbench = { data: data, charts: charts };
  const reports = data.reports;

  const palette = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b',
                   '#e377c2', '#17becf', '#bcbd22', '#7f7f7f'];
  // Ten fixed colours, then hues spaced by the golden angle: 26 reports stay apart.
  const colour = (i) => i < palette.length ? palette[i]
    : 'hsl(' + Math.round((i * 137.508) % 360) + ', 60%, 42%)';
  // The phases' own colours, so that a phase is not mistaken for a report.
  const phasePalette = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948',
                        '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac', '#1b9e77', '#d95f02',
                        '#7570b3', '#e7298a', '#66a61e', '#e6ab02', '#a6761d', '#666666'];
  // Lines with more points than this are drawn thinned by Chart.js's decimation plugin (LTTB:
  // every point drawn is one of the report's); tooltips and tables keep the exact values.
  const drawnPoints = 1000;

  // --- text --------------------------------------------------------------------------------
  const seconds = (s) => s == null ? 'n/a' : s < 120 ? s.toPrecision(4) + ' s'
    : s < 7200 ? (s / 60).toFixed(1) + ' min' : (s / 3600).toFixed(2) + ' h';
  const bytes = (b) => b == null ? 'n/a' : b >= 2 ** 30 ? (b / 2 ** 30).toFixed(2) + ' GiB'
    : (b / 2 ** 20).toFixed(2) + ' MiB';
  // As ftbench's own text (text::format_usd): cents, and three significant digits below $1.
  const usd = (v) => v == null ? 'n/a' : '$' + (v > 0 && v < 1
    ? v.toFixed(Math.max(2, 2 - Math.floor(Math.log10(v)))) : v.toFixed(2));
  const percent = (f) => f == null ? 'n/a' : (100 * f).toFixed(2) + ' %';
  // A whole number with thousands separators, whatever the browser's locale: 12,345.
  const whole = (v) => String(Math.round(v)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const number = (v) => v == null ? 'n/a' : Number(v).toPrecision(6);
  const name = (r) => r.label + ' · ' + (r.device || r.backend) + ' · ' + r.run_name;

  // --- elements (text always as text nodes: report strings are never parsed as HTML) -------
  // A dollar figure ("$0.891", "$1,234.50") in a box of its own that does not break: a narrow
  // table cell may otherwise wrap it mid-number.
  const dollars = /(\$\d[\d,]*(?:\.\d+)?)/;
  function setText(e, text) {
    String(text).split(dollars).forEach((part, i) => {
      if (!part) return;
      if (i % 2) {
        const figure = document.createElement('span');
        figure.className = 'nowrap';
        figure.textContent = part;
        e.appendChild(figure);
      } else {
        e.appendChild(document.createTextNode(part));
      }
    });
  }
  function element(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text != null) setText(e, text);
    return e;
  }
  const main = document.getElementById('main');
  function section(title, note) {
    const s = element('section');
    s.appendChild(element('h2', null, title));
    if (note) s.appendChild(element('p', 'note', note));
    main.appendChild(s);
    return s;
  }
  function table(parent, header, rows) {
    const t = element('table');
    const head = element('tr');
    header.forEach((h) => head.appendChild(element('th', null, h)));
    t.appendChild(head);
    rows.forEach((row) => {
      const tr = element('tr');
      row.forEach((cell, i) => tr.appendChild(element('td', i > 0 && isNaN(parseFloat(cell))
        ? 'text' : null, cell)));
      t.appendChild(tr);
    });
    parent.appendChild(t);
    return t;
  }
  // A chart in its own box; `id` is its canvas's id and its key in window.ftbench.charts.
  function chart(parent, id, config, short) {
    const box = element('div', short ? 'chart short' : 'chart');
    const canvas = element('canvas');
    canvas.id = id;
    box.appendChild(canvas);
    parent.appendChild(box);
    const options = config.options || {};
    options.animation = false;
    options.responsive = true;
    options.maintainAspectRatio = false;
    config.options = options;
    charts[id] = new Chart(canvas.getContext('2d'), config);
    return charts[id];
  }
  const axis = (title, extra) => Object.assign({ title: { display: true, text: title } }, extra);
  // Non-finite values (null) stay in as gaps, so a line does not bridge them.
  // (Lines long enough to be decimated drop them: the decimation takes numbers only.)
  const points = (xs, ys, keep) => {
    const all = xs.map((x, i) => ({ x: x, y: ys[i] })).filter((p, i) => !keep || keep(i));
    return all.length > drawnPoints ? all.filter((p) => p.y != null) : all;
  };
  // A series of one point has no line to show it: drawn as a dot.
  const radius = (data) => data.filter((p) => p.y != null).length < 2 ? 4 : 0;
  const lineOptions = (xTitle, yTitle, yTick) => ({
    parsing: false,
    normalized: true,
    interaction: { mode: 'nearest', intersect: false },
    scales: { x: axis(xTitle, { type: 'linear' }),
              y: axis(yTitle, yTick ? { ticks: { callback: yTick } } : {}) },
    plugins: { decimation: { enabled: true, algorithm: 'lttb', samples: drawnPoints,
                             threshold: drawnPoints } },
  });

  // --- sections ------------------------------------------------------------------------------
  function header() {
    document.title = 'ftbench report: ' + reports.map((r) => r.run_name).join(' vs ');
    document.getElementById('title').textContent = document.title;
    document.getElementById('subtitle').textContent = reports.map(name).join('  |  ');
    document.getElementById('footer').textContent = 'Written by ' + data.generated_by +
      ' (' + data.schema + '); charts by Chart.js ' + Chart.version + ' (MIT licence).';
  }

  // The four figures a reader came for, before any detail: one box each for one report, a row
  // a report for several. Each figure's element carries the exact value (data-value) it shows.
  const headlineFigures = [
    ['time', 'time from t0 to the end', (h) => h.run_seconds, seconds],
    ['tokens', 'tokens/s (real, measured steps)', (h) => h.tokens_per_second,
      (v) => v == null ? 'n/a' : whole(v)],
    ['cost', 'cost', (h) => h.cost_usd, (v) => v == null ? 'not priced' : usd(v)],
    ['mfu', 'MFU (datasheet peak)', (h) => h.mfu, percent]];
  function figure(tag, className, r, [key, , value, format]) {
    const v = value(r.headline);
    const e = element(tag, className);
    e.dataset.report = r.label;
    e.dataset.figure = key;
    e.dataset.value = v == null ? '' : String(v);
    e.appendChild(element('span', 'value', format(v)));
    return e;
  }
  function headline() {
    const s = section('At a glance', reports.length > 1
      ? 'Each run: its time from t0 to the end, its throughput, its bill at the price it is ' +
        'set at, and its model FLOPs utilisation. The details follow.'
      : 'The run\'s time from t0 to the end, its throughput, its bill at the price it is set ' +
        'at, and its model FLOPs utilisation. The details follow.');
    s.id = 'headline';
    if (reports.length === 1) {
      const r = reports[0];
      const row = element('div', 'figures');
      headlineFigures.forEach((f) => {
        const box = figure('div', 'figure', r, f);
        const what = f[0] === 'cost' && r.headline.cost_rate ? 'cost at ' + r.headline.cost_rate
          : f[0] === 'cost' ? 'cost: ' + r.cost.reason : f[1];
        box.appendChild(element('span', 'what', what));
        row.appendChild(box);
      });
      s.appendChild(row);
      return;
    }
    const t = element('table', 'headline');
    const head = element('tr');
    ['', 'run'].concat(headlineFigures.map((f) => f[1])).forEach((h) =>
      head.appendChild(element('th', null, h)));
    t.appendChild(head);
    reports.forEach((r) => {
      const tr = element('tr');
      tr.appendChild(element('td', null, r.label));
      tr.appendChild(element('td', 'text', (r.device || r.backend) + ' · ' + r.run_name));
      headlineFigures.forEach((f) => tr.appendChild(figure('td', 'figure', r, f)));
      t.appendChild(tr);
    });
    s.appendChild(t);
  }

  function runs() {
    const s = section('Runs');
    table(s, ['', 'report', 'run', 'device', 'GPUs', 'status', 'started (UTC)', 'steps'],
      reports.map((r) => [r.label, r.source, r.run_name, r.device + ' (' + r.backend + ')',
        String(r.gpus), r.status + (r.error ? ': ' + r.error : ''), r.started_at_utc,
        String(r.steps.step.length)]));
  }

  function verdict() {
    const c = data.comparison;
    if (!c) return;
    const s = section('Comparison', 'As ftbench compare judges these reports, each against A.');
    const kind = c.refused ? 'refused' : c.kind === 'same job' ? 'same' : 'differently';
    s.appendChild(element('p', 'verdict ' + kind, c.refused
      ? 'Refused: different jobs. ' + c.headline : c.headline));
    if (c.differences.length) {
      table(s, ['kind', 'what differs'].concat(reports.map((r) => r.label)).concat(['note']),
        c.differences.map((d) => [d.severity, d.what].concat(d.values).concat([d.note])));
    }
    const list = element('ul');
    c.verdicts.forEach((v) => list.appendChild(element('li', null, v)));
    s.appendChild(list);
  }

  function losses() {
    const s = section('Loss', 'Training loss per optimizer step; validation loss at each pass.');
    const datasets = [];
    reports.forEach((r, i) => {
      const loss = points(r.steps.step, r.steps.loss);
      datasets.push({ label: r.label + ' training', data: loss, borderColor: colour(i),
        backgroundColor: colour(i), borderWidth: 1.5, pointRadius: radius(loss), spanGaps: false });
      if (r.evaluations.after_step.length) {
        datasets.push({ label: r.label + ' validation',
          data: points(r.evaluations.after_step, r.evaluations.loss), borderColor: colour(i),
          backgroundColor: colour(i), borderDash: [6, 4], pointRadius: 3 });
      }
    });
    chart(s, 'loss', { type: 'line', data: { datasets: datasets },
      options: lineOptions('optimizer step', 'loss') });
  }

  function stepTimes() {
    const s = section('Step time', 'Wall time of every optimizer step (device synchronised). ' +
      'Warm-up steps, left out of every statistic, are drawn as triangles.');
    const datasets = [];
    reports.forEach((r, i) => {
      const st = r.steps;
      const measured = points(st.step, st.wall_seconds, (k) => !st.warmup[k]);
      datasets.push({ label: r.label + ' measured', borderColor: colour(i),
        backgroundColor: colour(i), borderWidth: 1, pointRadius: radius(measured), data: measured });
      if (st.warmup.some((w) => w)) {
        datasets.push({ label: r.label + ' warm-up', showLine: false, pointStyle: 'triangle',
          pointRadius: 5, borderColor: colour(i), backgroundColor: colour(i),
          data: points(st.step, st.wall_seconds, (k) => st.warmup[k]) });
      }
    });
    chart(s, 'step-time', { type: 'line', data: { datasets: datasets },
      options: lineOptions('optimizer step', 'seconds') });
    table(s, ['', 'measured', 'warm-up left out', 'mean', 'median', 'p90', 'p99', 'min', 'max',
      'stddev', 'CV'], reports.map((r) => {
      const m = r.step_time.summary;
      const s = (v) => m.count > 0 ? seconds(v) : 'n/a';
      return [r.label, String(m.count), String(r.step_time.warmup_steps_excluded), s(m.mean),
        s(m.median), s(m.p90), s(m.p99), s(m.min), s(m.max), s(m.stddev),
        m.count > 0 ? percent(m.cv) : 'n/a'];
    }));
    const grid = element('div', 'grid');
    s.appendChild(grid);
    reports.forEach((r, i) => {
      const h = r.step_time.histogram;
      if (!h.counts.length) return;
      const labels = h.counts.map((_, b) => h.edges[b].toPrecision(4) + '–' +
        h.edges[b + 1].toPrecision(4) + ' s');
      chart(grid, 'step-histogram-' + r.label, { type: 'bar',
        data: { labels: labels, datasets: [{ label: r.label + ': measured steps per bin',
          data: h.counts, backgroundColor: colour(i), barPercentage: 1, categoryPercentage: 1 }] },
        options: { scales: { x: axis('step time'), y: axis('steps') } } }, true);
    });
  }

  function waterfall() {
    const s = section('From t0 to the end',
      'Every phase on the rented timeline, from t0 (' + reports.map((r) => r.label + ': ' +
      r.timeline.t0_source).join(', ') + '). The first step ends where training begins; a ' +
      'resumed run\'s earlier processes come first, each a rental of its own.');
    const kinds = [];
    const sets = {};
    reports.forEach((r, i) => {
      const seen = {};
      r.timeline.bars.forEach((b) => {
        if (!kinds.includes(b.phase)) kinds.push(b.phase);
        const n = seen[b.phase] = (seen[b.phase] || 0) + 1;
        const key = b.phase + '#' + n;
        if (!sets[key]) sets[key] = { phase: b.phase, data: reports.map(() => null) };
        sets[key].data[i] = [b.start_seconds, b.end_seconds];
      });
    });
    const datasets = Object.values(sets).map((d) => ({ label: d.phase, data: d.data,
      grouped: false, backgroundColor: phasePalette[kinds.indexOf(d.phase) % phasePalette.length],
      borderWidth: 0 }));
    const firstStep = (r) => r.steps.step.length ? seconds(r.timeline.time_to_first_step_seconds)
      + (r.timeline.processes > 1 ? ' over ' + r.timeline.processes + ' processes' : '')
      : 'n/a (no step finished)';
    const labels = reports.map((r) => name(r) + ' (time to first step ' + firstStep(r) + ')');
    chart(s, 'waterfall', { type: 'bar', data: { labels: labels, datasets: datasets },
      options: { indexAxis: 'y', scales: { x: axis('seconds from t0', { min: 0 }) },
        plugins: { legend: { labels: { filter: (item, d) =>
          d.datasets.findIndex((x) => x.label === item.text) === item.datasetIndex } },
          tooltip: { callbacks: { label: (c) => c.dataset.label + ': ' + seconds(c.raw[0]) +
            ' to ' + seconds(c.raw[1]) + ' (' + seconds(c.raw[1] - c.raw[0]) + ')' } } } } });
    // A row a report, each tall enough to read.
    charts.waterfall.canvas.parentNode.style.height = Math.max(240, 90 + 34 * reports.length) + 'px';
    table(s, ['', 'time to first step', 'run (to the last phase)']
      .concat(kinds), reports.map((r) => [r.label, firstStep(r),
      seconds(r.timeline.bars.length ? r.timeline.bars[r.timeline.bars.length - 1].end_seconds
        : null)].concat(kinds.map((k) => seconds(r.timeline.bars.filter((b) => b.phase === k)
      .reduce((sum, b) => sum + b.end_seconds - b.start_seconds, 0) || null)))));
  }

  function memory() {
    const s = section('Memory by phase', 'The largest figure over each kind of phase. Host: ' +
      'peak resident set. Device: the caching allocator\'s peak and the device-wide used peak.');
    const phases = [];
    reports.forEach((r) => r.memory.by_phase.forEach((m) => {
      if (!phases.includes(m.phase)) phases.push(m.phase);
    }));
    const series = (r, field) => phases.map((p) => {
      const m = r.memory.by_phase.find((x) => x.phase === p);
      return m ? m[field] : null;
    });
    const bar = (id, fields, title) => {
      const datasets = [];
      reports.forEach((r, i) => fields.forEach(([field, what], j) => {
        const values = series(r, field);
        if (values.some((v) => v != null)) {
          // The second figure of a report as an outline beside its first.
          datasets.push({ label: r.label + ' ' + what, data: values, borderColor: colour(i),
            backgroundColor: j ? 'rgba(0,0,0,0)' : colour(i), borderWidth: j ? 2 : 0 });
        }
      }));
      if (!datasets.length) {
        s.appendChild(element('p', 'note', title + ' by phase: not recorded in any report ' +
          '(reports before schema 1.2, or no device memory on a CPU run); the run\'s peaks are ' +
          'in the table.'));
        return;
      }
      // Ticks at whole multiples of a round step of one binary unit (view::byte_axis).
      const a = data.memory_axes[id === 'memory-host' ? 'host' : 'device'];
      chart(s, id, { type: 'bar', data: { labels: phases, datasets: datasets },
        options: { scales: { y: axis(title, { min: 0, max: a.top_bytes,
          ticks: { stepSize: a.step_bytes, callback: (v) => (v / a.unit_bytes) + ' ' + a.unit } }) },
          plugins: { tooltip: { callbacks: { label: (c) => c.dataset.label + ': ' +
            bytes(c.raw) } } } } }, true);
    };
    bar('memory-host', [['peak_rss_bytes', 'host peak RSS']], 'host memory');
    // On a CPU run the "allocator peak" is the tensor bytes ftbench counted (docs/methodology.md).
    bar('memory-device', [['peak_allocated_bytes', 'allocator peak (CPU: tensors counted)'],
      ['device_used_peak_bytes', 'device-wide used']], 'device memory');
    table(s, ['', 'host peak RSS', 'allocator peak', 'reserved peak', 'device used peak',
      'device total', 'plan\'s predicted peak'], reports.map((r) => [r.label,
      bytes(r.memory.peak_rss_bytes), bytes(r.memory.peak_allocated_bytes),
      bytes(r.memory.peak_reserved_bytes), bytes(r.memory.device_used_peak_bytes),
      bytes(r.memory.device_total_bytes), bytes(r.memory.predicted_peak_bytes)]));
  }

  function speed() {
    const s = section('Throughput and MFU', 'Tokens per second over the measured steps; MFU ' +
      'against the datasheet peak and, where the run was given one, the measured GEMM peak.');
    const grid = element('div', 'grid');
    s.appendChild(grid);
    const labels = reports.map(name);
    chart(grid, 'throughput', { type: 'bar', data: { labels: labels, datasets: [
      { label: 'real tokens/s', backgroundColor: colour(0),
        data: reports.map((r) => r.throughput.tokens_per_second_real) },
      { label: 'padded tokens/s', backgroundColor: colour(9),
        data: reports.map((r) => r.throughput.tokens_per_second_padded) }] },
    options: { scales: { y: axis('tokens per second') } } }, true);
    const first = (r) => r.mfu.entries.length ? r.mfu.entries[0] : {};
    chart(grid, 'mfu', { type: 'bar', data: { labels: labels, datasets: [
      { label: 'MFU vs datasheet peak', backgroundColor: colour(2),
        data: reports.map((r) => first(r).mfu == null ? null : first(r).mfu) },
      { label: 'MFU vs measured GEMM peak', backgroundColor: colour(3),
        data: reports.map((r) => first(r).mfu_gemm == null ? null : first(r).mfu_gemm) }] },
    options: { scales: { y: axis('model FLOPs utilisation', { min: 0,
      ticks: { callback: (v) => (100 * v).toFixed(0) + ' %' } }) },
      plugins: { tooltip: { callbacks: { label: (c) => c.dataset.label + ': ' +
        percent(c.raw) } } } } }, true);
    table(s, ['', 'real tokens/s', 'padded tokens/s', 'padding', 'MFU formula', 'achieved TFLOP/s',
      'MFU', 'peak (source)', 'MFU vs GEMM', 'GEMM peak (source)'], reports.map((r) => [r.label,
      number(r.throughput.tokens_per_second_real), number(r.throughput.tokens_per_second_padded),
      percent(r.throughput.padding_fraction), first(r).formula || 'n/a',
      number(first(r).achieved_tflops), percent(first(r).mfu),
      number(r.mfu.peak_tflops) + ' (' + r.mfu.peak_source + ')', percent(first(r).mfu_gemm),
      number(r.mfu.gemm_peak_tflops) + ' (' + r.mfu.gemm_peak_source + ')']));
  }

  function costs() {
    const s = section('Cost per offer', 'What each run cost, billed by each offer\'s rules ' +
      '(increment, minimum, whole instances), split at the end of the first step: the set-up ' +
      'paid before any training, then the rest of the bill.');
    const rows = [];
    reports.forEach((r) => r.cost.offers.forEach((o) => rows.push({ r: r, o: o })));
    reports.filter((r) => !r.cost.offers.length).forEach((r) => s.appendChild(element('p',
      'note', r.label + ': not priced: ' + r.cost.reason)));
    if (!rows.length) return;
    const labels = rows.map((x) => x.r.label + ' · ' + x.o.name + (x.o.chosen ? ' (chosen)' : ''));
    const box = chart(s, 'cost', { type: 'bar', data: { labels: labels, datasets: [
      { label: 'before the first step ends', backgroundColor: colour(4),
        data: rows.map((x) => x.o.before_first_step_usd) },
      { label: 'from the first step to the end (billed)', backgroundColor: colour(0),
        data: rows.map((x) => x.o.from_first_step_usd) }] },
    options: { indexAxis: 'y', scales: { x: axis('US dollars', { stacked: true,
      ticks: { callback: usd } }), y: { stacked: true } },
      plugins: { tooltip: { callbacks: { label: (c) => c.dataset.label + ': ' + usd(c.raw),
        afterBody: (items) => 'billing: ' + rows[items[0].dataIndex].o.billing } } } } });
    box.canvas.parentNode.style.height = Math.max(240, 60 + 26 * rows.length) + 'px';
    table(s, ['', 'offer', 'billing', 'GPUs billed', 'before first step', 'after', 'billed',
      'flags'], rows.map((x) => [x.r.label, x.o.name + (x.o.chosen ? ' (chosen)' : ''),
      x.o.billing, String(x.o.gpus_billed), usd(x.o.before_first_step_usd),
      usd(x.o.from_first_step_usd), usd(x.o.billed_usd), x.o.flags]));
  }

  function details() {
    const s = section('Spec, environment and fingerprints');
    reports.forEach((r) => {
      const d = element('details');
      d.appendChild(element('summary', null, name(r)));
      table(d, ['fingerprint', 'value'], [['spec', r.fingerprints.spec || 'not recorded'],
        ['data', r.fingerprints.data || 'not recorded'],
        ['weights', r.fingerprints.weights || 'random or not recorded']]);
      d.appendChild(element('h3', null, 'spec (resolved)'));
      d.appendChild(element('pre', null, JSON.stringify(r.spec, null, 2)));
      d.appendChild(element('h3', null, 'environment'));
      d.appendChild(element('pre', null, JSON.stringify(r.environment, null, 2)));
      s.appendChild(d);
    });
  }

  try {
    header();
    headline();
    runs();
    verdict();
    losses();
    stepTimes();
    waterfall();
    memory();
    speed();
    costs();
    details();
    document.documentElement.dataset.ftbenchReady = '1';
  } catch (e) {
    document.documentElement.dataset.ftbenchReady = 'error: ' + e.message;
    throw e;
  }
})();
