// overview.js: the Overview page: requests/s, tokens, spend, error ratio and latency over
// a chosen range from the ledger's rollups (GET /admin/v1/overview), refreshed every
// 10 s; the top keys, models and errors.
import { api, query } from './api.js';
import { h, replace, table, fmt } from './dom.js';

// usdAxis labels a USD axis with enough digits for fractions of a cent.
const usdAxis = (u, vals) => vals.map(v => '$' + (v === 0 ? '0' : v.toPrecision(2)));

const ranges = [['15m', 15 * 60e3], ['1h', 3600e3], ['6h', 6 * 3600e3], ['24h', 86400e3], ['7d', 7 * 86400e3], ['30d', 30 * 86400e3]];

export async function overviewPage(root) {
  const pick = h('select', { id: 'range', name: 'range' }, ranges.map(([n]) => h('option', { value: n }, 'Last ' + n)));
  pick.value = sessionStorage.getItem('agate.range') || '1h';
  const auto = h('input', { type: 'checkbox', id: 'auto', checked: true });
  const cards = h('div', { class: 'cards' });
  const charts = h('div', { class: 'charts' });
  const tops = h('div', { class: 'tops' });
  const stamp = h('p', { class: 'hint', 'aria-live': 'off' });
  root.append(h('div', { class: 'toolbar' }, h('label', { for: 'range' }, 'Range '), pick,
    h('label', { class: 'check' }, auto, ' Refresh every 10 s'), h('button', { type: 'button', id: 'refresh', class: 'quiet', onclick: () => load() }, 'Refresh')), cards, charts, tops, stamp);
  const plots = [];

  async function load() {
    const span = ranges.find(r => r[0] === pick.value)[1];
    const to = new Date();
    const o = await api('GET', '/admin/v1/overview' + query({ from: new Date(to - span).toISOString(), to: to.toISOString(), top: 5 }));
    const t = o.totals;
    const secs = span / 1000;
    const card = (label, value, name) => h('div', { class: 'card', 'data-metric': name }, h('span', { class: 'label' }, label), h('span', { class: 'value' }, value));
    replace(cards,
      card('Requests', fmt.int(t.requests), 'requests'),
      card('Requests/s', (t.requests / secs).toFixed(3), 'rps'),
      card('Tokens in / out', fmt.int(t.prompt_tokens) + ' / ' + fmt.int(t.completion_tokens), 'tokens'),
      card('Spend', fmt.usd(t.cost_usd), 'spend'),
      card('Error ratio', fmt.pct(t.requests ? t.errors / t.requests : 0), 'errors'),
      card('Latency p50 / p95 / p99', o.latency_ms.p50 + ' / ' + o.latency_ms.p95 + ' / ' + o.latency_ms.p99 + ' ms', 'latency'),
      card('First token p50 / p95 / p99', o.first_token_ms.p50 + ' / ' + o.first_token_ms.p95 + ' / ' + o.first_token_ms.p99 + ' ms', 'ttft'));
    drawCharts(o, span, to);
    replace(tops,
      table('Top keys by spend', [{ title: 'Key', get: r => r.name || '(none)' }, { title: 'Requests', num: true, get: r => fmt.int(r.requests) }, { title: 'Spend', num: true, get: r => fmt.usd(r.cost_usd) }], o.top_keys),
      table('Top models by spend', [{ title: 'Model', get: r => r.name }, { title: 'Requests', num: true, get: r => fmt.int(r.requests) }, { title: 'Spend', num: true, get: r => fmt.usd(r.cost_usd) }], o.top_models),
      table('Top errors', [{ title: 'Status', get: r => r.status }, { title: 'Type', get: r => r.error_type || '—' }, { title: 'Count', num: true, get: r => fmt.int(r.count) }], o.top_errors));
    stamp.textContent = 'Updated ' + to.toLocaleTimeString('en-GB') + ' · step ' + o.step_seconds + ' s · latency from the newest ' + fmt.int(o.latency_sample) + ' records';
  }

  function drawCharts(o, span, to) {
    // Every bucket of the range, zero where the ledger has none.
    const step = o.step_seconds;
    const end = Math.floor(to / 1000 / step) * step;
    const start = end - Math.ceil(span / 1000 / step) * step + step;
    const by = new Map(o.series.map(p => [p.t, p]));
    const xs = [], reqs = [], errs = [], tin = [], tout = [], cost = [];
    for (let x = start; x <= end; x += step) {
      const p = by.get(x) || {};
      xs.push(x); reqs.push((p.requests || 0) / step); errs.push((p.errors || 0) / step);
      tin.push(p.prompt_tokens || 0); tout.push(p.completion_tokens || 0); cost.push(p.cost_usd || 0);
    }
    const defs = [
      ['Requests per second', [xs, reqs, errs], [{ label: 'requests/s', stroke: '#3b82f6' }, { label: 'errors/s', stroke: '#ef4444' }]],
      ['Tokens per bucket', [xs, tin, tout], [{ label: 'prompt', stroke: '#10b981' }, { label: 'completion', stroke: '#f59e0b' }]],
      ['Spend per bucket (USD)', [xs, cost], [{ label: 'USD', stroke: '#8b5cf6', value: (u, v) => v == null ? '--' : fmt.usd(v) }], usdAxis],
    ];
    if (typeof uPlot === 'undefined') return; // the library did not load: the cards still tell
    const width = Math.max(280, Math.min(charts.clientWidth || 900, 1200) / (charts.clientWidth > 900 ? 3 : 1) - 24);
    if (plots.length === 0) {
      for (const [title, data, series, yValues] of defs) {
        const box = h('figure', { class: 'chart' }, h('figcaption', null, title));
        charts.append(box);
        plots.push(new uPlot({ width, height: 180, series: [{}, ...series.map(s => ({ ...s, width: 2, points: { show: false } }))],
          axes: [{ stroke: 'currentColor', grid: { stroke: 'rgba(128,128,128,.2)' } }, { stroke: 'currentColor', grid: { stroke: 'rgba(128,128,128,.2)' }, size: 70, ...(yValues ? { values: yValues } : {}) }] }, data, box));
      }
    } else {
      defs.forEach(([, data], i) => plots[i].setData(data));
    }
  }

  let timer = null;
  const schedule = () => { clearInterval(timer); timer = auto.checked ? setInterval(() => load().catch(() => {}), 10000) : null; };
  pick.addEventListener('change', () => { sessionStorage.setItem('agate.range', pick.value); load(); });
  auto.addEventListener('change', schedule);
  await load();
  schedule();
  return () => { clearInterval(timer); plots.forEach(p => p.destroy()); };
}
