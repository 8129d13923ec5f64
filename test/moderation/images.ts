import sharp, { type Sharp } from "sharp";
import { drawingPng, landscapeJpeg } from "../webupload/images";

/** Decodes/resizes like the upload path: drop alpha, stretch to 224x224, raw RGB. */
async function toModelInput(input: Sharp): Promise<Uint8Array> {
  return new Uint8Array(await input.removeAlpha().resize(224, 224, { fit: "fill" }).raw().toBuffer());
}

/** The flat-colour cartoon of the upload tests, as the model's input. */
export async function drawingImage(): Promise<Uint8Array> {
  return toModelInput(sharp(await drawingPng()));
}

/** The photo-like landscape of the upload tests, as the model's input. */
export async function landscapeImage(): Promise<Uint8Array> {
  return toModelInput(sharp(await landscapeJpeg()));
}
