const mode = process.env.MODE
if (mode === 'tf' || mode === 'wasm') { const tf = await import('@tensorflow/tfjs'); if (mode === 'wasm') { const { initBackend } = await import('../../src/moderation/backend'); await initBackend() } }
if (mode === 'core') { await import('@tensorflow/tfjs-core') }
self.postMessage({ type: 'ready' })
