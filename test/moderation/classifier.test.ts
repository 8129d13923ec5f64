import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createNsfwClassifier, DEFAULT_NSFW_THRESHOLDS, isMature, type NsfwScores } from "../../src/moderation";
import { drawingImage, landscapeImage } from "./images";

const classifier = createNsfwClassifier({ timeoutMs: 10_000, maxQueue: 32 });

beforeAll(async () => {
  const t0 = performance.now();
  await classifier.warm();
  console.log(
    `nsfw model load + warm: ${(performance.now() - t0).toFixed(0)} ms, ` +
      `rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
  );
}, 60_000);

afterAll(() => classifier.close());

function expectDistribution(s: NsfwScores): void {
  const values = [s.Porn, s.Hentai, s.Sexy, s.Neutral, s.Drawing];
  for (const v of values) expect(v).toBeWithin(0, 1.000001);
  expect(values.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 3);
}

describe("nsfw classifier (real MobileNetV2)", () => {
  test("warm() is idempotent once loaded", async () => {
    await classifier.warm();
    await classifier.warm();
  });

  test("a flat-colour drawing is not mature", async () => {
    const s = await classifier.classify(await drawingImage());
    console.log("drawing scores", s);
    expectDistribution(s);
    expect(isMature(s, DEFAULT_NSFW_THRESHOLDS)).toBe(false);
  }, 60_000);

  test("a photo-like landscape is not mature", async () => {
    const s = await classifier.classify(await landscapeImage());
    console.log("landscape scores", s);
    expectDistribution(s);
    expect(s.Neutral).toBe(Math.max(s.Porn, s.Hentai, s.Sexy, s.Neutral, s.Drawing));
    expect(isMature(s, DEFAULT_NSFW_THRESHOLDS)).toBe(false);
  }, 60_000);

  test("same input gives the same scores and the caller's buffer is untouched", async () => {
    const rgb = await landscapeImage();
    const before = rgb.slice();
    const [a, b] = await Promise.all([classifier.classify(rgb), classifier.classify(rgb)]);
    expect(a).toEqual(b);
    expect(rgb).toEqual(before);
    expect(classifier.queueDepth).toBe(0);
  }, 60_000);

  test("wrong input size rejects without touching the worker", async () => {
    await expect(classifier.classify(new Uint8Array(100))).rejects.toThrow(/150528/);
  });

  test("p50 latency over 20 runs", async () => {
    const rgb = await drawingImage();
    const times: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      await classifier.classify(rgb);
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    console.log(
      `nsfw classify latency p50 ${times[10]?.toFixed(1)} ms, max ${times[19]?.toFixed(1)} ms, ` +
        `rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
    );
  }, 60_000);
});
