/**
 * Runs a Keras functional model (the topology JSON and weights of a tfjs "layers-model", as nsfwjs ships MobileNetV2)
 * with `@tensorflow/tfjs-core` ops alone, for a smaller resident model than tfjs-layers gives:
 * - no tfjs-layers or tfjs umbrella import (~17 MB of code and its data in the Worker);
 * - each BatchNormalization folded into the convolution before it, and each ReLU6 and ZeroPadding2D into a fused
 *   convolution, so a block makes one tensor where tfjs-layers made three or four;
 * - each activation disposed as soon as its last consumer ran (tfjs-layers keeps them to the end of the call: its
 *   peak was 37 MB of tensors for MobileNetV2, here it is the weights plus two or three activations).
 * Only the layer types and options that model uses are understood; anything else is refused when the model loads.
 */
import * as tf from '@tensorflow/tfjs-core'

/** The parts of a tfjs layers-model artifact read here (model.json's `modelTopology` and its weights manifest). */
export interface KerasArtifacts {
  /** Keras's model JSON: `{ class_name, config: { layers, input_layers, output_layers } }`, or that in `model_config`. */
  modelTopology: object
  weightSpecs: WeightSpec[]
  weightData: Uint8Array
}

interface KerasModelConfig {
  layers: KerasLayer[]
  input_layers: [string, number, number][]
  output_layers: [string, number, number][]
}

interface KerasLayer {
  class_name: string
  name: string
  // biome-ignore lint/suspicious/noExplicitAny: each layer class has its own config; the fields used are checked below
  config: Record<string, any>
  inbound_nodes: [string, number, number, unknown][][]
}

type WeightSpec = tf.io.WeightsManifestEntry

type Pair = [number, number]
type Padding = 'same' | 'valid' | [Pair, Pair]
type Activation = 'linear' | 'relu' | 'relu6'

/** The model as a list of operations in execution order, with its parameters still in JS arrays. */
type Op =
  | {
      kind: 'conv'
      name: string
      input: string
      depthwise: boolean
      kernel: Float32Array
      kernelShape: number[]
      bias: Float32Array | null
      strides: Pair
      padding: Padding
      activation: Activation
    }
  | { kind: 'pad'; name: string; input: string; padding: [Pair, Pair] }
  | { kind: 'relu6'; name: string; input: string }
  | { kind: 'add'; name: string; inputs: string[] }
  | { kind: 'avgpool'; name: string; input: string; pool: Pair; strides: Pair; padding: 'same' | 'valid' }
  | { kind: 'flatten'; name: string; input: string }
  | {
      kind: 'dense'
      name: string
      input: string
      kernel: Float32Array
      kernelShape: number[]
      bias: Float32Array | null
      activation: Activation | 'softmax'
    }

export interface KerasModel {
  /** x: [1, height, width, channels] float32, disposed by the call. Returns the output tensor (the caller's). */
  predict(x: tf.Tensor4D): tf.Tensor
  dispose(): void
}

/** The weights as float32 arrays by name: tfjs's uint8 quantization is `min + value * scale`. */
function readWeights(specs: WeightSpec[], data: Uint8Array): Map<string, { values: Float32Array; shape: number[] }> {
  const weights = new Map<string, { values: Float32Array; shape: number[] }>()
  let offset = 0
  for (const spec of specs) {
    const size = spec.shape.reduce((a, b) => a * b, 1)
    const q = spec.quantization
    let values: Float32Array
    if (q?.dtype === 'uint8' && q.min !== undefined && q.scale !== undefined && spec.dtype === 'float32') {
      const { min, scale } = q
      values = new Float32Array(size)
      for (let i = 0; i < size; i++) values[i] = min + data[offset + i] * scale
      offset += size
    } else if (!q && spec.dtype === 'float32') {
      values = new Float32Array(data.slice(offset, offset + size * 4).buffer)
      offset += size * 4
    } else throw new Error(`model weight ${spec.name}: unsupported encoding`)
    if (offset > data.length) throw new Error(`model weight ${spec.name}: past the end of the weight data`)
    weights.set(spec.name, { values, shape: spec.shape })
  }
  return weights
}

/** A ZeroPadding2D's padding as ((top, bottom), (left, right)); Keras also writes it as `n` or `(rows, columns)`. */
function zeroPadding(layer: KerasLayer): [Pair, Pair] {
  const { padding, data_format: format } = layer.config
  if (format !== undefined && format !== 'channels_last') throw new Error(`layer ${layer.name}: unsupported options`)
  const pair = (p: unknown): Pair | null =>
    typeof p === 'number'
      ? [p, p]
      : Array.isArray(p) && p.length === 2 && p.every(Number.isInteger)
        ? [p[0], p[1]]
        : null
  const whole = typeof padding === 'number' ? pair(padding) : null
  if (whole) return [whole, whole]
  if (Array.isArray(padding) && padding.length === 2) {
    const [rows, columns] = padding
    if (typeof rows === 'number' && typeof columns === 'number') return [pair(rows)!, pair(columns)!]
    const top = pair(rows)
    const left = pair(columns)
    if (top && left) return [top, left]
  }
  throw new Error(`layer ${layer.name}: unsupported padding ${JSON.stringify(padding)}`)
}

/** The functional model's layers and ends, from the topology as either saver writes it. */
function modelConfig(artifacts: KerasArtifacts): KerasModelConfig {
  // Keras's converter wraps the model in `model_config`; tfjs-layers saves it bare.
  type KerasModelJson = { class_name?: string; config?: KerasModelConfig; model_config?: KerasModelJson }
  const topology = artifacts.modelTopology as KerasModelJson
  const { class_name: modelClass, config: model } = topology.model_config ?? topology
  if (!model?.layers) throw new Error('not a Keras model topology')
  if (modelClass !== 'Model' && modelClass !== 'Functional') {
    throw new Error(`unsupported model class ${modelClass}`)
  }
  return model
}

type WeightOf = (name: string) => { values: Float32Array; shape: number[] }

/** Folds a BatchNormalization into the linear convolution whose one reader it is, in place; returns that op's name. */
function foldBatchNorm(layer: KerasLayer, conv: Op | undefined, weight: WeightOf): string {
  const c = layer.config
  if (conv?.kind !== 'conv' || conv.activation !== 'linear' || (c.axis !== -1 && c.axis !== 3)) {
    throw new Error(`layer ${layer.name}: a BatchNormalization only after a linear convolution is supported`)
  }
  const gamma = c.scale ? weight(`${layer.name}/gamma`).values : null
  const beta = c.center ? weight(`${layer.name}/beta`).values : null
  const mean = weight(`${layer.name}/moving_mean`).values
  const variance = weight(`${layer.name}/moving_variance`).values
  // y = (conv(x) + b - mean) * gamma / sqrt(var + eps) + beta: scale the kernel's output channels (its last
  // axis; a depthwise kernel's last two, with a multiplier of 1) and fold the rest into the bias.
  const channels = mean.length
  const bias = conv.bias ?? new Float32Array(channels)
  for (let ch = 0; ch < channels; ch++) {
    const factor = (gamma ? gamma[ch] : 1) / Math.sqrt(variance[ch] + c.epsilon)
    for (let i = ch; i < conv.kernel.length; i += channels) conv.kernel[i] *= factor
    bias[ch] = (bias[ch] - mean[ch]) * factor + (beta ? beta[ch] : 0)
  }
  conv.bias = bias
  return conv.name
}

/** The topology as operations, with BatchNormalization, ReLU6 and ZeroPadding2D folded where they can be. */
function plan(artifacts: KerasArtifacts): { ops: Op[]; input: string; output: string } {
  const model = modelConfig(artifacts)
  const weights = readWeights(artifacts.weightSpecs, artifacts.weightData)
  const weight = (name: string) => {
    const w = weights.get(name)
    if (!w) throw new Error(`model weight ${name} is missing`)
    return w
  }
  const inputsOf = (layer: KerasLayer) => {
    if (layer.inbound_nodes.length > 1) throw new Error(`layer ${layer.name} is shared, which is not supported`)
    return (layer.inbound_nodes[0] ?? []).map(([name, nodeIndex, tensorIndex]) => {
      if (nodeIndex !== 0 || tensorIndex !== 0) throw new Error(`layer ${layer.name}: unsupported input ${name}`)
      return name
    })
  }
  const readers = new Map<string, number>()
  for (const layer of model.layers) for (const i of inputsOf(layer)) readers.set(i, (readers.get(i) ?? 0) + 1)

  const ops: Op[] = []
  const byName = new Map<string, Op>()
  // A folded layer's name stands for the op that now computes its output.
  const renamed = new Map<string, string>()
  const source = (name: string) => renamed.get(name) ?? name
  // An op can absorb the layer after it only when that layer is its one reader.
  const foldable = (layerInput: string) => {
    const op = byName.get(source(layerInput))
    return op && readers.get(layerInput) === 1 ? op : undefined
  }
  const push = (op: Op) => {
    ops.push(op)
    byName.set(op.name, op)
  }
  let input: string | undefined
  for (const layer of model.layers) {
    const c = layer.config
    const [first] = inputsOf(layer)
    switch (layer.class_name) {
      case 'InputLayer':
        if (input) throw new Error('models with more than one input are not supported')
        input = layer.name
        break
      case 'ZeroPadding2D':
        push({ kind: 'pad', name: layer.name, input: source(first), padding: zeroPadding(layer) })
        break
      case 'Conv2D':
      case 'DepthwiseConv2D': {
        const depthwise = layer.class_name === 'DepthwiseConv2D'
        if (c.data_format !== 'channels_last' || c.dilation_rate.some((d: number) => d !== 1)) {
          throw new Error(`layer ${layer.name}: unsupported options`)
        }
        if (depthwise && c.depth_multiplier !== 1) throw new Error(`layer ${layer.name}: unsupported depth multiplier`)
        if (c.activation !== 'linear' && c.activation !== 'relu') {
          throw new Error(`layer ${layer.name}: unsupported activation ${c.activation}`)
        }
        const kernel = weight(`${layer.name}/${depthwise ? 'depthwise_kernel' : 'kernel'}`)
        let from = source(first)
        let padding: Padding = c.padding
        const pad = foldable(first)
        if (pad?.kind === 'pad' && c.padding === 'valid') {
          ops.splice(ops.indexOf(pad), 1)
          from = pad.input
          padding = pad.padding
        }
        push({
          kind: 'conv',
          name: layer.name,
          input: from,
          depthwise,
          kernel: kernel.values,
          kernelShape: kernel.shape,
          bias: c.use_bias ? weight(`${layer.name}/bias`).values : null,
          strides: c.strides,
          padding,
          activation: c.activation,
        })
        break
      }
      case 'BatchNormalization':
        renamed.set(layer.name, foldBatchNorm(layer, foldable(first), weight))
        break
      case 'ReLU': {
        if (c.max_value !== 6 || (c.negative_slope ?? 0) !== 0 || (c.threshold ?? 0) !== 0) {
          throw new Error(`layer ${layer.name}: only ReLU6 is supported`)
        }
        const conv = foldable(first)
        if (conv?.kind === 'conv' && conv.activation === 'linear') {
          conv.activation = 'relu6'
          renamed.set(layer.name, conv.name)
        } else push({ kind: 'relu6', name: layer.name, input: source(first) })
        break
      }
      case 'Add':
        push({ kind: 'add', name: layer.name, inputs: inputsOf(layer).map(source) })
        break
      case 'AveragePooling2D':
        push({
          kind: 'avgpool',
          name: layer.name,
          input: source(first),
          pool: c.pool_size,
          strides: c.strides,
          padding: c.padding,
        })
        break
      case 'Flatten':
        push({ kind: 'flatten', name: layer.name, input: source(first) })
        break
      case 'Dense': {
        if (!['linear', 'relu', 'softmax'].includes(c.activation)) {
          throw new Error(`layer ${layer.name}: unsupported activation ${c.activation}`)
        }
        const kernel = weight(`${layer.name}/kernel`)
        push({
          kind: 'dense',
          name: layer.name,
          input: source(first),
          kernel: kernel.values,
          kernelShape: kernel.shape,
          bias: c.use_bias ? weight(`${layer.name}/bias`).values : null,
          activation: c.activation,
        })
        break
      }
      case 'Dropout': // the identity when predicting
        renamed.set(layer.name, source(first))
        break
      default:
        throw new Error(`unsupported layer ${layer.class_name} (${layer.name})`)
    }
  }
  const [out, ...more] = model.output_layers
  if (!input || !out || more.length > 0) throw new Error('only models with one input and one output are supported')
  return { ops, input, output: source(out[0]) }
}

/** One op as a function of its inputs, holding its parameters as tensors (added to `params`). */
function kernelOf(op: Op, params: tf.Tensor[]): (inputs: tf.Tensor[]) => tf.Tensor {
  const keep = <T extends tf.Tensor>(t: T) => {
    params.push(t)
    return t
  }
  switch (op.kind) {
    case 'conv': {
      const { depthwise, strides, activation } = op
      const filter = keep(tf.tensor4d(op.kernel, op.kernelShape as [number, number, number, number]))
      const bias = op.bias ? keep(tf.tensor1d(op.bias)) : undefined
      const pad: 'same' | 'valid' | [Pair, Pair, Pair, Pair] = Array.isArray(op.padding)
        ? [[0, 0], op.padding[0], op.padding[1], [0, 0]]
        : op.padding
      if (!depthwise) return ([x]) => tf.fused.conv2d({ x: x as tf.Tensor4D, filter, strides, pad, bias, activation })
      // Explicit padding is not in fused.depthwiseConv2d's declared type, but its shape computation (the same as
      // conv2d's) takes it, and the wasm kernel gets the four sides either way.
      const dwPad = pad as 'same' | 'valid'
      return ([x]) => tf.fused.depthwiseConv2d({ x: x as tf.Tensor4D, filter, strides, pad: dwPad, bias, activation })
    }
    case 'pad': {
      const paddings: Pair[] = [[0, 0], op.padding[0], op.padding[1], [0, 0]]
      return ([x]) => tf.pad(x, paddings)
    }
    case 'relu6':
      return ([x]) => tf.relu6(x)
    case 'add':
      return (xs) => tf.addN(xs)
    case 'avgpool': {
      const { pool, strides, padding } = op
      return ([x]) => tf.avgPool(x as tf.Tensor4D, pool, strides, padding)
    }
    case 'flatten':
      return ([x]) => tf.reshape(x, [x.shape[0], -1])
    case 'dense': {
      const { activation } = op
      const b = keep(tf.tensor2d(op.kernel, op.kernelShape as [number, number]))
      const bias = op.bias ? keep(tf.tensor1d(op.bias)) : undefined
      if (activation !== 'softmax') return ([a]) => tf.fused.matMul({ a: a as tf.Tensor2D, b, bias, activation })
      return ([a]) => tf.tidy(() => tf.softmax(tf.fused.matMul({ a: a as tf.Tensor2D, b, bias })))
    }
  }
}

/** Builds the model's tensors on the current tfjs backend. */
export function loadKerasModel(artifacts: KerasArtifacts): KerasModel {
  const { ops, input, output } = plan(artifacts)
  const params: tf.Tensor[] = []
  // Only the tensors and the graph's wiring outlive this call: the JS copies of the weights become garbage.
  let steps: { name: string; inputs: string[]; run: (inputs: tf.Tensor[]) => tf.Tensor }[]
  try {
    steps = ops.map((op) => ({
      name: op.name,
      inputs: op.kind === 'add' ? op.inputs : [op.input],
      run: kernelOf(op, params),
    }))
  } catch (error) {
    for (const t of params) t.dispose()
    throw error
  }
  const readers = new Map<string, number>()
  for (const step of steps) for (const i of step.inputs) readers.set(i, (readers.get(i) ?? 0) + 1)
  return {
    predict(x) {
      const live = new Map<string, tf.Tensor>([[input, x]])
      const left = new Map(readers)
      try {
        for (const step of steps) {
          live.set(step.name, step.run(step.inputs.map((i) => live.get(i)!)))
          for (const i of step.inputs) {
            const n = left.get(i)! - 1
            left.set(i, n)
            if (n === 0) {
              live.get(i)!.dispose()
              live.delete(i)
            }
          }
        }
        const y = live.get(output)!
        live.delete(output)
        return y
      } finally {
        for (const t of live.values()) t.dispose()
      }
    },
    dispose() {
      for (const t of params) t.dispose()
    },
  }
}
