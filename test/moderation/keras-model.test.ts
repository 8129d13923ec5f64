import { beforeAll, describe, expect, test } from 'bun:test'
// The reference: tfjs-layers (through the umbrella package, as nsfwjs loads it) runs the same artifacts.
import * as tfl from '@tensorflow/tfjs'
import * as tf from '@tensorflow/tfjs-core'
import { load as loadNsfwjs } from 'nsfwjs/core'
import { MobileNetV2Model } from 'nsfwjs/models/mobilenet_v2'
import { initBackend } from '../../src/moderation/backend'
import { type KerasArtifacts, loadKerasModel } from '../../src/moderation/keras-model'
import { loadNsfwModel, nsfwModelArtifacts, scoreNsfw } from '../../src/moderation/nsfw-model'
import { IMAGE_BYTES, type NsfwScores } from '../../src/moderation/protocol'
import { drawingImage, landscapeImage } from './images'

// The classifier's own backend, in this process (the server runs it in a Worker).
beforeAll(() => initBackend('wasm'))

/** Deterministic pseudo-random values (a small LCG), so a failure reproduces. */
function seeded(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

/**
 * A small functional model with every layer type and folding case the runner knows: ZeroPadding2D before a valid
 * convolution (folded) and before a pooling (not folded), Conv2D with and without a bias and a BatchNormalization,
 * DepthwiseConv2D, ReLU6 after a BatchNormalization (fused) and after an Add (not), a residual Add whose input has two
 * readers, AveragePooling2D, Flatten, Dropout and Dense with relu and softmax; random weights.
 */
async function smallModel(): Promise<{ reference: tfl.LayersModel; artifacts: KerasArtifacts }> {
  const input = tfl.input({ shape: [9, 9, 3], name: 'in' })
  const relu6 = (name: string) => tfl.layers.reLU({ maxValue: 6, name })
  const bn = (name: string) => tfl.layers.batchNormalization({ name, epsilon: 0.001 })
  let x = tfl.layers
    .zeroPadding2d({
      padding: [
        [0, 1],
        [0, 1],
      ],
      name: 'pad1',
    })
    .apply(input) as tfl.SymbolicTensor
  x = tfl.layers
    .conv2d({ filters: 4, kernelSize: 3, strides: 2, padding: 'valid', useBias: false, name: 'c1' })
    .apply(x) as tfl.SymbolicTensor
  x = relu6('r1').apply(bn('bn1').apply(x)) as tfl.SymbolicTensor
  let y = tfl.layers
    .depthwiseConv2d({ kernelSize: 3, padding: 'same', useBias: false, name: 'dw' })
    .apply(x) as tfl.SymbolicTensor
  y = relu6('r2').apply(bn('bn2').apply(y)) as tfl.SymbolicTensor
  y = tfl.layers
    .conv2d({ filters: 4, kernelSize: 1, padding: 'same', useBias: true, name: 'c2' })
    .apply(y) as tfl.SymbolicTensor
  y = bn('bn3').apply(y) as tfl.SymbolicTensor
  let z = tfl.layers.add({ name: 'add' }).apply([x, y]) as tfl.SymbolicTensor
  z = relu6('r3').apply(z) as tfl.SymbolicTensor
  z = tfl.layers
    .conv2d({ filters: 5, kernelSize: 3, padding: 'same', activation: 'relu', name: 'c3' })
    .apply(z) as tfl.SymbolicTensor
  z = tfl.layers.zeroPadding2d({ padding: 1, name: 'pad2' }).apply(z) as tfl.SymbolicTensor
  z = tfl.layers
    .averagePooling2d({ poolSize: 2, strides: 2, padding: 'valid', name: 'pool' })
    .apply(z) as tfl.SymbolicTensor
  z = tfl.layers.flatten({ name: 'flat' }).apply(z) as tfl.SymbolicTensor
  z = tfl.layers.dense({ units: 6, activation: 'relu', name: 'd1' }).apply(z) as tfl.SymbolicTensor
  z = tfl.layers.dropout({ rate: 0.5, name: 'drop' }).apply(z) as tfl.SymbolicTensor
  z = tfl.layers.dense({ units: 3, activation: 'softmax', name: 'd2' }).apply(z) as tfl.SymbolicTensor
  const reference = tfl.model({ inputs: input, outputs: z })
  const random = seeded(7)
  reference.setWeights(
    reference.weights.map((w) => {
      const shape = w.shape as number[]
      const values = Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () =>
        // A variance is positive; the rest spread around zero.
        w.name.includes('moving_variance') ? 0.2 + random() : random() * 2 - 1,
      )
      return tf.tensor(values, shape)
    }),
  )
  let saved: tf.io.ModelArtifacts | undefined
  await reference.save(
    tf.io.withSaveHandler(async (artifacts) => {
      saved = artifacts
      return { modelArtifactsInfo: { dateSaved: new Date(), modelTopologyType: 'JSON' } }
    }),
  )
  const artifacts: KerasArtifacts = {
    modelTopology: saved!.modelTopology as object,
    weightSpecs: saved!.weightSpecs!,
    weightData: new Uint8Array(saved!.weightData as ArrayBuffer),
  }
  return { reference, artifacts }
}

/** The largest difference between two equally long lists of numbers. */
const maxDifference = (a: ArrayLike<number>, b: ArrayLike<number>) =>
  Math.max(...Array.from(a, (v, i) => Math.abs(v - b[i])))

/** A copy of the artifacts whose topology `edit` changed. */
function withTopology(artifacts: KerasArtifacts, edit: (layers: { class_name: string; name: string }[]) => void) {
  const topology = structuredClone(artifacts.modelTopology) as {
    config: { layers: { class_name: string; name: string }[] }
  }
  edit(topology.config.layers)
  return { ...artifacts, modelTopology: topology }
}

describe('keras-model: a Keras functional model on tfjs-core ops', () => {
  test('gives what tfjs-layers gives for every layer type and folding it knows', async () => {
    const { reference, artifacts } = await smallModel()
    const ours = loadKerasModel(artifacts)
    const random = seeded(11)
    for (let round = 0; round < 3; round++) {
      const values = Float32Array.from({ length: 9 * 9 * 3 }, () => random() * 4 - 2)
      const expected = await (reference.predict(tf.tensor4d(values, [1, 9, 9, 3])) as tf.Tensor).data()
      const output = ours.predict(tf.tensor4d(values, [1, 9, 9, 3]))
      const got = await output.data()
      output.dispose()
      expect(got.length).toBe(3)
      expect(maxDifference(got, expected)).toBeLessThan(1e-5)
    }
    ours.dispose()
  })

  test('keeps no tensor of a prediction but its output, and dispose() frees its weights', async () => {
    const { artifacts } = await smallModel()
    const before = tf.memory().numTensors
    const model = loadKerasModel(artifacts)
    const loaded = tf.memory().numTensors
    expect(loaded).toBeGreaterThan(before)
    const output = model.predict(tf.zeros([1, 9, 9, 3]))
    expect(tf.memory().numTensors).toBe(loaded + 1)
    output.dispose()
    expect(tf.memory().numTensors).toBe(loaded)
    model.dispose()
    expect(tf.memory().numTensors).toBe(before)
  })

  test('refuses, when it loads, a layer it does not know', async () => {
    const { artifacts } = await smallModel()
    const edited = withTopology(artifacts, (layers) => {
      layers.find((l) => l.name === 'pool')!.class_name = 'MaxPooling2D'
    })
    expect(() => loadKerasModel(edited)).toThrow('unsupported layer MaxPooling2D (pool)')
  })

  test("reads a ZeroPadding2D's padding in each of Keras's forms, and refuses another", async () => {
    const { reference, artifacts } = await smallModel()
    const input = Float32Array.from({ length: 9 * 9 * 3 }, (_, i) => Math.sin(i))
    const expected = await (reference.predict(tf.tensor4d(input, [1, 9, 9, 3])) as tf.Tensor).data()
    const padded = (padding: unknown) =>
      withTopology(artifacts, (layers) => {
        ;(layers.find((l) => l.name === 'pad2') as unknown as { config: { padding: unknown } }).config.padding = padding
      })
    for (const padding of [
      1,
      [1, 1],
      [
        [1, 1],
        [1, 1],
      ],
    ]) {
      const model = loadKerasModel(padded(padding))
      const output = model.predict(tf.tensor4d(input, [1, 9, 9, 3]))
      expect(maxDifference(await output.data(), expected)).toBeLessThan(1e-5)
      output.dispose()
      model.dispose()
    }
    expect(() => loadKerasModel(padded('same'))).toThrow('layer pad2: unsupported padding "same"')
  })

  test('refuses a BatchNormalization it cannot fold into a convolution', async () => {
    const { artifacts } = await smallModel()
    // bn3 made to read the Add's output (the layer order stays topological: add precedes it).
    const topology = structuredClone(artifacts.modelTopology) as {
      config: { layers: { name: string; inbound_nodes: unknown[][][] }[] }
    }
    const layers = topology.config.layers
    const bn3 = layers.findIndex((l) => l.name === 'bn3')
    const [moved] = layers.splice(bn3, 1)
    layers.splice(layers.findIndex((l) => l.name === 'add') + 1, 0, moved)
    moved.inbound_nodes = [[['add', 0, 0, {}]]]
    expect(() => loadKerasModel({ ...artifacts, modelTopology: topology })).toThrow(
      'a BatchNormalization only after a linear convolution is supported',
    )
  })

  test('refuses weights it cannot read: too short, or an encoding it does not know', async () => {
    const { artifacts } = await smallModel()
    expect(() => loadKerasModel({ ...artifacts, weightData: artifacts.weightData.subarray(0, 100) })).toThrow(
      'past the end of the weight data',
    )
    const [first, ...rest] = artifacts.weightSpecs
    const float16 = { ...first, quantization: { dtype: 'float16' as const } }
    expect(() => loadKerasModel({ ...artifacts, weightSpecs: [float16, ...rest] })).toThrow('unsupported encoding')
    expect(() =>
      loadKerasModel({ ...artifacts, weightSpecs: artifacts.weightSpecs.filter((s) => s.name !== 'c1/kernel') }),
    ).toThrow()
  })
})

describe('nsfw-model: nsfwjs MobileNetV2 without nsfwjs', () => {
  test('scores real pictures as nsfwjs itself does (tfjs-layers, the umbrella package), within 1e-5', async () => {
    const reference = await loadNsfwjs('MobileNetV2', { modelDefinitions: [MobileNetV2Model] })
    const ours = await loadNsfwModel()
    const random = seeded(3)
    const noise = Uint8Array.from({ length: IMAGE_BYTES }, () => Math.floor(random() * 256))
    const gradient = Uint8Array.from({ length: IMAGE_BYTES }, (_, i) => Math.floor((i / IMAGE_BYTES) * 255))
    const inputs: [string, Uint8Array][] = [
      ['flat cartoon', await drawingImage()],
      ['landscape photo', await landscapeImage()],
      ['noise', noise],
      ['black', new Uint8Array(IMAGE_BYTES)],
      ['gradient', gradient],
    ]
    for (const [name, rgb] of inputs) {
      const image = tf.tensor3d(rgb, [224, 224, 3], 'int32')
      const expected = await reference.classify(image, 5)
      image.dispose()
      const got = await scoreNsfw(ours, rgb)
      const classes = Object.keys(got) as (keyof NsfwScores)[]
      const difference = maxDifference(
        classes.map((c) => got[c]),
        classes.map((c) => expected.find((p) => p.className === c)!.probability),
      )
      console.log(`${name}: largest difference from nsfwjs ${difference.toExponential(2)}`)
      expect(difference).toBeLessThan(1e-5)
    }
    reference.dispose()
    ours.dispose()
  }, 60_000)

  test('a scan holds the weights and a few activations at a time, and leaves no tensor behind', async () => {
    const model = await loadNsfwModel()
    const { numTensors, numBytes: weights } = tf.memory()
    const profile = await tf.profile(async () => {
      await scoreNsfw(model, new Uint8Array(IMAGE_BYTES))
    })
    // MobileNetV2's largest activation is block 1's expansion, 112 x 112 x 96 floats (4.8 MB). Each one is disposed
    // once its last reader ran: the peak stays under two of those (tfjs-layers held 28 MB of them to the end).
    const largestActivation = 112 * 112 * 96 * 4
    console.log(`weights ${weights} bytes, peak of activations ${profile.peakBytes - weights} bytes`)
    expect(profile.peakBytes - weights).toBeLessThan(2 * largestActivation)
    expect(tf.memory().numTensors).toBe(numTensors)
    model.dispose()
  })

  test('the bundled artifacts are the quantized MobileNetV2 the runner reads', async () => {
    const artifacts = await nsfwModelArtifacts()
    expect(artifacts.weightSpecs.length).toBe(266)
    expect(artifacts.weightData.length).toBe(
      artifacts.weightSpecs.reduce((n, s) => n + s.shape.reduce((a, b) => a * b, 1), 0),
    )
  })
})
