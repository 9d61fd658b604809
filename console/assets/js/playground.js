// playground.js: the Playground: a streamed chat with a model through POST
// /v1/chat/completions as a client key (pasted here, kept in this page's memory only, so
// the key's policy applies: models, limits, budget), with each answer's tokens, cost
// (the model's configured price) and latency.
import { api } from './api.js';
import { h, field, fmt } from './dom.js';

export async function playgroundPage(root) {
  const models = (await api('GET', '/admin/v1/models')).data;
  const key = h('input', { name: 'key', type: 'password', autocomplete: 'off', required: true });
  const model = h('select', { name: 'model' }, models.map(m => h('option', { value: m.name }, m.name)));
  const system = h('textarea', { name: 'system', rows: 2 });
  const prompt = h('textarea', { name: 'prompt', rows: 4, required: true });
  const send = h('button', { type: 'submit' }, 'Send');
  const stop = h('button', { type: 'button', class: 'quiet', disabled: true }, 'Stop');
  const form = h('form', { class: 'panel form', 'aria-label': 'Playground' },
    h('div', { class: 'grid' }, field('Client key', key, 'the secret of the key whose policy applies; kept in this page only'), field('Model', model)),
    field('System prompt', system), field('Message', prompt), h('div', { class: 'actions' }, send, stop));
  const log = h('div', { class: 'chat', 'aria-live': 'polite' });
  root.append(form, log);
  const history = [];
  let ctl = null;

  form.addEventListener('submit', async e => {
    e.preventDefault();
    const text = prompt.value.trim();
    if (!text) return;
    history.push({ role: 'user', content: text });
    log.append(h('div', { class: 'msg user' }, h('span', { class: 'who' }, 'You'), h('p', null, text)));
    prompt.value = '';
    const out = h('p', { class: 'answer' });
    const stats = h('small', { class: 'stats' }, 'waiting…');
    log.append(h('div', { class: 'msg assistant' }, h('span', { class: 'who' }, model.value), out, stats));
    const msgs = (system.value.trim() ? [{ role: 'system', content: system.value.trim() }] : []).concat(history);
    ctl = new AbortController();
    send.disabled = true; stop.disabled = false;
    const t0 = performance.now();
    let first = 0, usage = null, answer = '';
    try {
      const r = await fetch('/v1/chat/completions', {
        method: 'POST', signal: ctl.signal, credentials: 'omit',
        headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + key.value },
        body: JSON.stringify({ model: model.value, messages: msgs, stream: true, stream_options: { include_usage: true } }),
      });
      if (!r.ok) {
        let m = r.status + ' ' + r.statusText;
        try { m = (await r.json()).error.message; } catch { /* not JSON */ }
        throw new Error(m);
      }
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const ev = buf.slice(0, i); buf = buf.slice(i + 2);
          for (const line of ev.split('\n')) {
            if (!line.startsWith('data:')) continue;
            const data = line.slice(5).trim();
            if (data === '[DONE]') continue;
            const c = JSON.parse(data);
            if (c.error) throw new Error(c.error.message || 'the stream ended with an error');
            const d = c.choices && c.choices[0] && c.choices[0].delta;
            if (d && d.content) {
              if (!first) first = performance.now() - t0;
              answer += d.content;
              out.textContent = answer;
            }
            if (c.usage) usage = c.usage;
          }
        }
      }
      history.push({ role: 'assistant', content: answer });
      const total = performance.now() - t0;
      const price = (models.find(m => m.name === model.value) || {}).price;
      let cost = '';
      if (usage && price) {
        const cached = (usage.prompt_tokens_details && usage.prompt_tokens_details.cached_tokens) || 0;
        cost = ' · ' + fmt.usd(((usage.prompt_tokens - cached) * price.input + cached * (price.cached_input || price.input) + usage.completion_tokens * price.output) / 1e6);
      }
      stats.textContent = (usage ? fmt.int(usage.prompt_tokens) + ' in / ' + fmt.int(usage.completion_tokens) + ' out tokens' : 'no usage') + cost +
        ' · first token ' + Math.round(first) + ' ms · total ' + Math.round(total) + ' ms';
      stats.dataset.done = '1';
    } catch (x) {
      history.pop();
      stats.textContent = 'Error: ' + x.message;
      stats.classList.add('error');
      stats.dataset.done = '1';
    } finally {
      send.disabled = false; stop.disabled = true; ctl = null;
    }
  });
  stop.addEventListener('click', () => ctl && ctl.abort());
  return () => ctl && ctl.abort();
}
