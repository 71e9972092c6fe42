// Browser example: the `browser` export condition embeds the wasm builds, so no fetch of a
// .wasm file is needed. Runs four decode steps and shows the attention output.
import { init } from 'edgekernels';
import { runDecode } from '../decode-step.js';

const out = document.getElementById('result');
try {
  const ek = await init();
  const result = runDecode(ek, 4);
  document.getElementById('build').textContent = result.build;
  out.textContent = 'decode ' + JSON.stringify(result);
  out.dataset.status = 'done';
  ek.dispose();
} catch (e) {
  out.textContent = `error: ${e.message}`;
  out.dataset.status = 'error';
}
