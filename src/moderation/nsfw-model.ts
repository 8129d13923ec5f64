/**
 * nsfwjs's MobileNetV2 (the model JSON and base64 weights the package bundles as modules, so nothing is fetched over
 * the network and the single binary embeds them), run by keras-model.ts on tfjs-core: not through nsfwjs's own loader,
 * which imports the whole tfjs umbrella package and tfjs-layers (keras-model.ts says what that saves).
 */
import * as tf from '@tensorflow/tfjs-core'
import { MobileNetV2Model } from 'nsfwjs/models/mobilenet_v2'
import { type KerasArtifacts, type KerasModel, loadKerasModel } from './keras-model'
import { IMAGE_SIDE, type NsfwScores } from './protocol'

/** The model's output classes, in the order of its softmax (nsfwjs's NSFW_CLASSES). */
const CLASSES = ['Drawing', 'Hentai', 'Neutral', 'Porn', 'Sexy'] as const

export async function nsfwModelArtifacts(): Promise<KerasArtifacts> {
  const [{ default: json }, { default: weights }] = await Promise.all([
    MobileNetV2Model.modelJson(),
    MobileNetV2Model.weightBundles[0]!(),
  ])
  return {
    modelTopology: json.modelTopology ?? {},
    weightSpecs: json.weightsManifest?.flatMap((group) => group.weights) ?? [],
    weightData: Buffer.from(weights, 'base64'),
  }
}

/** Builds the model on the current tfjs backend. */
export async function loadNsfwModel(): Promise<KerasModel> {
  return loadKerasModel(await nsfwModelArtifacts())
}

/** The class probabilities of a 224x224 RGB picture (row-major bytes). */
export async function scoreNsfw(model: KerasModel, rgb: Uint8Array): Promise<NsfwScores> {
  // The input scaled to [0, 1], as nsfwjs feeds it.
  const input = tf.tidy(() =>
    tf.div<tf.Tensor4D>(tf.cast(tf.tensor4d(rgb, [1, IMAGE_SIDE, IMAGE_SIDE, 3], 'int32'), 'float32'), 255),
  )
  const output = model.predict(input)
  try {
    const probabilities = await output.data()
    const scores = {} as NsfwScores
    CLASSES.forEach((name, i) => {
      scores[name] = probabilities[i]
    })
    return scores
  } finally {
    output.dispose()
  }
}
