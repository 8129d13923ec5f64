import * as tf from '@tensorflow/tfjs'
import { load, type NSFWJS } from 'nsfwjs/core'
import { MobileNetV2Model } from 'nsfwjs/models/mobilenet_v2'
import { type BackendChoice, initBackend } from './backend'
import { IMAGE_BYTES, IMAGE_SIDE, type NsfwScores, type WorkerMessage, type WorkerRequest } from './protocol'

declare const self: Worker

function post(message: WorkerMessage): void {
  self.postMessage(message)
}

async function score(model: NSFWJS, rgb: Uint8Array): Promise<NsfwScores> {
  const input = tf.tensor3d(rgb, [IMAGE_SIDE, IMAGE_SIDE, 3], 'int32')
  try {
    // topk = 5 returns every class; nsfwjs does the /255 normalisation itself.
    const predictions = await model.classify(input, 5)
    const scores: NsfwScores = { Porn: 0, Hentai: 0, Sexy: 0, Neutral: 0, Drawing: 0 }
    for (const p of predictions) scores[p.className] = p.probability
    return scores
  } finally {
    input.dispose()
  }
}

async function start(choice: BackendChoice): Promise<NSFWJS> {
  const t0 = performance.now()
  const backend = await initBackend(choice)
  // The "MobileNetV2" name makes nsfwjs import the model JSON and weights bundled in the
  // package as modules, so nothing is fetched over the network. Only that model is imported
  // (the package's default entry imports all three, 38 MB of weights, into the single binary too).
  const model = await load('MobileNetV2', { modelDefinitions: [MobileNetV2Model] })
  // One dummy inference through the same path real jobs take, so the first job does not
  // pay for kernel setup.
  await score(model, new Uint8Array(IMAGE_BYTES))
  post({ type: 'ready', backend, loadMs: Math.round(performance.now() - t0) })
  return model
}

// Set by the classifier's first message, `init`; jobs only arrive after it (messages keep their order).
let modelReady: Promise<NSFWJS> | undefined

self.onmessage = async (event: MessageEvent<WorkerRequest>) => {
  const msg = event.data
  if (msg.type === 'init') {
    modelReady = start(msg.backend)
    modelReady.catch((err: unknown) => post({ type: 'fatal', message: String(err) }))
    return
  }
  try {
    if (!modelReady) throw new Error('job before init')
    post({ type: 'result', id: msg.id, scores: await score(await modelReady, msg.rgb) })
  } catch (err) {
    post({ type: 'error', id: msg.id, message: String(err) })
  }
}
