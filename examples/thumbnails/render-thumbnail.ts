/**
 * The processor of the thumbnails example: renders a large picture (a Mandelbrot set, pure CPU work in JS),
 * scales it down to a thumbnail and encodes it as PNG (node:zlib for the deflate, the rest here). It runs in
 * a worker thread of warren's isolate pool, so the worker's event loop, acks and heartbeats never wait for
 * it, and a render that runs away is killed at `hardTimeoutMs`. This module is importable by itself: the
 * isolate imports it and finds the job by its name.
 */
import { deflateSync } from 'node:zlib';
import { defineJob } from '../../src';

export interface ThumbnailRequest {
  readonly width: number;
  readonly height: number;
  /** The thumbnail's width; its height keeps the picture's ratio. */
  readonly thumbWidth: number;
  /** Where the view is centred and how far it is zoomed. */
  readonly centre: readonly [number, number];
  readonly zoom: number;
}

export const renderThumbnail = defineJob(
  'image.thumbnail',
  {
    queue: 'images',
    attempts: 2,
    isolate: 'thread',
    processor: __filename,
    hardTimeoutMs: 20_000,
    memoryLimitMb: 256,
    pool: { size: 2 },
  },
  (data: ThumbnailRequest, ctx) => {
    const picture = renderMandelbrot(data, (row) => {
      if (row % 200 === 0) ctx.progress({ rendered: Math.round((row / data.height) * 100) });
    });
    const thumbHeight = Math.max(1, Math.round((data.height * data.thumbWidth) / data.width));
    const thumb = downscale(picture, data.width, data.height, data.thumbWidth, thumbHeight);
    return {
      width: data.thumbWidth,
      height: thumbHeight,
      png: encodePng(thumb, data.thumbWidth, thumbHeight),
    };
  },
);

/** RGB bytes, 3 per pixel, row by row. */
function renderMandelbrot(view: ThumbnailRequest, onRow: (row: number) => void): Uint8Array {
  const { width, height, centre, zoom } = view;
  const pixels = new Uint8Array(width * height * 3);
  const scale = 3 / (zoom * width);
  const MAX_ITERATIONS = 200;
  for (let y = 0; y < height; y++) {
    onRow(y);
    const ci = centre[1] + (y - height / 2) * scale;
    for (let x = 0; x < width; x++) {
      const cr = centre[0] + (x - width / 2) * scale;
      let zr = 0;
      let zi = 0;
      let n = 0;
      while (n < MAX_ITERATIONS && zr * zr + zi * zi < 4) {
        const t = zr * zr - zi * zi + cr;
        zi = 2 * zr * zi + ci;
        zr = t;
        n++;
      }
      const at = (y * width + x) * 3;
      const shade = n === MAX_ITERATIONS ? 0 : (n * 255) / MAX_ITERATIONS;
      pixels[at] = shade;
      pixels[at + 1] = (shade * 0.6) | 0;
      pixels[at + 2] = 255 - shade;
    }
  }
  return pixels;
}

/** A box filter: each thumbnail pixel is the mean of the source pixels it covers. */
function downscale(
  src: Uint8Array,
  width: number,
  height: number,
  toWidth: number,
  toHeight: number,
): Uint8Array {
  const out = new Uint8Array(toWidth * toHeight * 3);
  for (let ty = 0; ty < toHeight; ty++) {
    const y0 = Math.floor((ty * height) / toHeight);
    const y1 = Math.max(y0 + 1, Math.floor(((ty + 1) * height) / toHeight));
    for (let tx = 0; tx < toWidth; tx++) {
      const x0 = Math.floor((tx * width) / toWidth);
      const x1 = Math.max(x0 + 1, Math.floor(((tx + 1) * width) / toWidth));
      const sum = [0, 0, 0];
      for (let y = y0; y < y1; y++)
        for (let x = x0; x < x1; x++) for (let c = 0; c < 3; c++) sum[c]! += src[(y * width + x) * 3 + c]!;
      const count = (y1 - y0) * (x1 - x0);
      for (let c = 0; c < 3; c++) out[(ty * toWidth + tx) * 3 + c] = sum[c]! / count;
    }
  }
  return out;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const out = Buffer.alloc(body.length + 8);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), body.length + 4);
  return out;
}

/** An 8-bit RGB PNG: signature, IHDR, one IDAT of the filtered rows, IEND. */
function encodePng(rgb: Uint8Array, width: number, height: number): Uint8Array {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: RGB
  const rows = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++)
    Buffer.from(rgb.buffer, rgb.byteOffset + y * width * 3, width * 3).copy(rows, y * (width * 3 + 1) + 1);
  const png = Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', new Uint8Array(0)),
  ]);
  return new Uint8Array(png.buffer, png.byteOffset, png.length);
}
