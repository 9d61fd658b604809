// models.js: the Models page: where each model routes (deployments, fallbacks) and each
// deployment's live state on the replica that answers (circuit, in flight, time to first
// token), refreshed every 5 s.
import { api } from './api.js';
import { h, replace, table } from './dom.js';

export async function modelsPage(root) {
  const out = h('div');
  root.append(h('p', { class: 'hint' }, 'Live state of the replica serving this console; refreshed every 5 s.'), out);
  async function load() {
    const m = await api('GET', '/admin/v1/models');
    const rows = [];
    for (const model of m.data) for (const d of model.deployments) rows.push({ model, d });
    replace(out, table('Models and their deployments', [
      { title: 'Model', get: r => r.model.name },
      { title: 'Backend', get: r => r.d.backend + ' (' + r.d.type + ')' },
      { title: 'Upstream model', get: r => r.d.upstream_model || '—' },
      { title: 'Weight / tier', num: true, get: r => r.d.weight + ' / ' + r.d.priority },
      { title: 'Circuit', get: r => h('span', { class: 'badge ' + (r.d.circuit === 'closed' ? 'ok' : 'bad') }, r.d.circuit + (r.d.circuit_retry_ms ? ' (' + Math.ceil(r.d.circuit_retry_ms / 1000) + ' s)' : '')) },
      { title: 'In flight', num: true, get: r => r.d.in_flight ?? '—' },
      { title: 'TTFT (EWMA)', num: true, get: r => r.d.ttft_ewma_ms !== undefined ? r.d.ttft_ewma_ms + ' ms' : '—' },
      { title: 'Resting (429)', get: r => r.d.resting ? 'yes' : '—' },
      { title: 'Fallbacks', get: r => r.model.fallbacks.join(', ') || '—' },
    ], rows));
  }
  await load();
  const timer = setInterval(() => load().catch(() => {}), 5000);
  return () => clearInterval(timer);
}
