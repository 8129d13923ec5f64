import * as tf from "@tensorflow/tfjs";
import { load, type NSFWJS } from "nsfwjs/core";
import { MobileNetV2Model } from "nsfwjs/models/mobilenet_v2";
import { initBackend } from "../../src/moderation/backend";
import { IMAGE_BYTES, IMAGE_SIDE, type JobRequest, type NsfwScores, type WorkerMessage } from "../../src/moderation/protocol";

declare const self: Worker;

function post(message: WorkerMessage): void {
  self.postMessage(message);
}

async function score(model: NSFWJS, rgb: Uint8Array): Promise<NsfwScores> {
  const input = tf.tensor3d(rgb, [IMAGE_SIDE, IMAGE_SIDE, 3], "int32");
  try {
    // topk = 5 returns every class; nsfwjs does the /255 normalisation itself.
    const predictions = await model.classify(input, 5);
    const scores: NsfwScores = { Porn: 0, Hentai: 0, Sexy: 0, Neutral: 0, Drawing: 0 };
    for (const p of predictions) scores[p.className] = p.probability;
    return scores;
  } finally {
    input.dispose();
  }
}

async function start(): Promise<NSFWJS> {
  await initBackend();
  // The "MobileNetV2" name makes nsfwjs import the model JSON and weights bundled in the
  // package as modules, so nothing is fetched over the network. Only that model is imported
  // (the package's default entry imports all three, 38 MB of weights, into the single binary too).
  const model = await load("MobileNetV2", { modelDefinitions: [MobileNetV2Model] });
  // One dummy inference through the same path real jobs take, so the first job does not
  // pay for kernel setup.
  if (!process.env.NOWARM) await score(model, new Uint8Array(IMAGE_BYTES));
  if (process.env.WORKER_GC) Bun.gc(true);
  const { heapStats } = await import('bun:jsc'); const h = heapStats();
  console.log('worker heap MB', Math.round(h.heapSize / 1048576), 'extra', Math.round(h.extraMemorySize / 1048576), 'tf memory', JSON.stringify(tf.memory()));
  return model;
}

const modelReady = start();
modelReady.then(
  () => post({ type: "ready" }),
  (err: unknown) => post({ type: "fatal", message: String(err) }),
);

self.onmessage = async (event: MessageEvent<JobRequest>) => {
  const { id, rgb } = event.data;
  try {
    post({ type: "result", id, scores: await score(await modelReady, rgb) });
  } catch (err) {
    post({ type: "error", id, message: String(err) });
  }
};
