const rss = () => Math.round(process.memoryUsage().rss / 1048576)
const smol = process.env.SMOL === '1'
const w = new Worker(new URL('./worker-gc.ts', import.meta.url), { smol } as any)
await new Promise<void>((r) => w.addEventListener('message', (e: MessageEvent) => e.data.type === 'ready' && r()))
console.log('ready', rss())
await new Promise((r) => setTimeout(r, 2000))
console.log('after 2s', rss(), 'gc', process.env.WORKER_GC ?? 0, 'smol', smol)
w.terminate(); process.exit(0)
