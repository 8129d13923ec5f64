import { expect, test } from 'bun:test'
import { createMetrics } from '../../src/http/observability'

test('the request duration histogram renders cumulative buckets: each observation counts in its bucket and every larger one', () => {
  const metrics = createMetrics()
  const labels = { route: '/x', method: 'GET', status: '200' }
  for (const seconds of [0.001, 0.005, 0.02, 0.3, 20]) metrics.request(labels, seconds)
  const text = metrics.render({ storageUsedBytes: 0, queueDepth: 0 })
  const bucket = (le: string) =>
    Number(
      new RegExp(`^http_request_duration_seconds_bucket\\{le="${le.replace('+', '\\+')}"\\} (\\d+)$`, 'm').exec(
        text,
      )?.[1],
    )
  expect([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10].map((le) => bucket(String(le)))).toEqual([
    2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4,
  ])
  expect(bucket('+Inf')).toBe(5)
  expect(text).toContain('http_request_duration_seconds_count 5')
  expect(text).toContain(`http_request_duration_seconds_sum ${0.001 + 0.005 + 0.02 + 0.3 + 20}`)
})
