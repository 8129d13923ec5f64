import { type BackendChoice, initBackend } from './backend'
import type { KerasModel } from './keras-model'
import { loadNsfwModel, scoreNsfw } from './nsfw-model'
import { IMAGE_BYTES, type WorkerMessage, type WorkerRequest } from './protocol'

declare const self: Worker

function post(message: WorkerMessage): void {
  self.postMessage(message)
}

async function start(choice: BackendChoice): Promise<KerasModel> {
  const t0 = performance.now()
  const backend = await initBackend(choice)
  const model = await loadNsfwModel()
  // One dummy inference through the same path real jobs take, so the first job does not
  // pay for kernel setup.
  await scoreNsfw(model, new Uint8Array(IMAGE_BYTES))
  post({ type: 'ready', backend, loadMs: Math.round(performance.now() - t0) })
  return model
}

// Set by the classifier's first message, `init`; jobs only arrive after it (messages keep their order).
let modelReady: Promise<KerasModel> | undefined

self.onmessage = async (event: MessageEvent<WorkerRequest>) => {
  const msg = event.data
  if (msg.type === 'init') {
    modelReady = start(msg.backend)
    modelReady.catch((err: unknown) => post({ type: 'fatal', message: String(err) }))
    return
  }
  try {
    if (!modelReady) throw new Error('job before init')
    post({ type: 'result', id: msg.id, scores: await scoreNsfw(await modelReady, msg.rgb) })
  } catch (err) {
    post({ type: 'error', id: msg.id, message: String(err) })
  }
}
