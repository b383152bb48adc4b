#!/usr/bin/env python3
"""Writes a random-weight Stable Diffusion model of SDXS's shape, as safetensors.

    tests/models/make_sdxs_like.py OUT.safetensors [--seed N]

stable-diffusion.cpp builds a fixed architecture for each model family it
recognises and refuses any tensor of another shape (docs/testing.md), so no
model smaller than its smallest family loads. That family is SDXS
(get_sd_version in src/model.cpp at 1f30df9: a CLIP-L token embedding of
width 768, no middle block, no output_blocks.7.1), and this writes exactly
its tensors, under the names sd.cpp reads in an original-layout checkpoint:

- cond_stage_model.transformer.text_model.*: CLIP ViT-L/14's text encoder
  (src/clip.hpp: 12 layers, width 768, 49,408 tokens, 77 positions);
- model.diffusion_model.*: the tiny UNet (src/unet.hpp: 320 base channels,
  channel_mult 1-2-4, one res block per level, attention at 4 and 2, eight
  heads, no middle block);
- first_stage_model.{decoder,encoder}.layers.*: the tiny autoencoder
  (src/tae.hpp, TAESD: 64 channels, 4 latent channels).

About 450 million f16 parameters, 0.9 GB: made at test time in a temporary
directory, never committed (issue #31). The weights are small random values
(a seeded block, repeated), norms are 1 and biases 0, so every activation
stays finite; the images are noise. One step at 64x64 takes about a second
on two cores.
"""
import argparse
import json
import struct

import numpy as np

CLIP_PREFIX = "cond_stage_model.transformer.text_model."
UNET_PREFIX = "model.diffusion_model."
TAE_PREFIX = "first_stage_model."

CLIP_VOCAB, CLIP_POSITIONS, CLIP_WIDTH, CLIP_LAYERS, CLIP_MLP = 49408, 77, 768, 12, 3072
MODEL_CHANNELS, TIME_EMBED, CONTEXT, HEADS = 320, 1280, 768, 8
CHANNEL_MULT, ATTENTION_AT = (1, 2, 4), (4, 2)
TAE_CHANNELS, LATENT_CHANNELS = 64, 4


class Tensors:
    """The tensors in order, as (name, shape, kind): kind is "weight",
    "norm" (ones) or "bias" (zeros)."""

    def __init__(self):
        self.items = []

    def add(self, name, shape, kind="weight"):
        self.items.append((name, tuple(shape), kind))

    def linear(self, name, n_in, n_out, bias=True):
        self.add(name + ".weight", (n_out, n_in))
        if bias:
            self.add(name + ".bias", (n_out,), "bias")

    def conv(self, name, n_in, n_out, kernel=3, bias=True):
        self.add(name + ".weight", (n_out, n_in, kernel, kernel))
        if bias:
            self.add(name + ".bias", (n_out,), "bias")

    def norm(self, name, channels):
        self.add(name + ".weight", (channels,), "norm")
        self.add(name + ".bias", (channels,), "bias")


def clip_text_encoder(t):
    p = CLIP_PREFIX
    t.add(p + "embeddings.token_embedding.weight", (CLIP_VOCAB, CLIP_WIDTH))
    t.add(p + "embeddings.position_embedding.weight", (CLIP_POSITIONS, CLIP_WIDTH))
    for i in range(CLIP_LAYERS):
        layer = f"{p}encoder.layers.{i}."
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            t.linear(layer + "self_attn." + proj, CLIP_WIDTH, CLIP_WIDTH)
        t.norm(layer + "layer_norm1", CLIP_WIDTH)
        t.norm(layer + "layer_norm2", CLIP_WIDTH)
        t.linear(layer + "mlp.fc1", CLIP_WIDTH, CLIP_MLP)
        t.linear(layer + "mlp.fc2", CLIP_MLP, CLIP_WIDTH)
    t.norm(p + "final_layer_norm", CLIP_WIDTH)


def res_block(t, name, channels, out_channels):
    t.norm(name + ".in_layers.0", channels)
    t.conv(name + ".in_layers.2", channels, out_channels)
    t.linear(name + ".emb_layers.1", TIME_EMBED, out_channels)
    t.norm(name + ".out_layers.0", out_channels)
    t.conv(name + ".out_layers.3", out_channels, out_channels)
    if channels != out_channels:
        t.conv(name + ".skip_connection", channels, out_channels, kernel=1)


def spatial_transformer(t, name, channels):
    t.norm(name + ".norm", channels)
    t.conv(name + ".proj_in", channels, channels, kernel=1)
    block = name + ".transformer_blocks.0."
    for attn, context in (("attn1", channels), ("attn2", CONTEXT)):
        t.linear(block + attn + ".to_q", channels, channels, bias=False)
        t.linear(block + attn + ".to_k", context, channels, bias=False)
        t.linear(block + attn + ".to_v", context, channels, bias=False)
        t.linear(block + attn + ".to_out.0", channels, channels)
    t.linear(block + "ff.net.0.proj", channels, channels * 4 * 2)  # GEGLU
    t.linear(block + "ff.net.2", channels * 4, channels)
    for n in ("norm1", "norm2", "norm3"):
        t.norm(block + n, channels)
    t.conv(name + ".proj_out", channels, channels, kernel=1)


def tiny_unet(t):
    """UnetModelBlock's constructor for VERSION_SDXS, block by block."""
    p = UNET_PREFIX
    t.linear(p + "time_embed.0", MODEL_CHANNELS, TIME_EMBED)
    t.linear(p + "time_embed.2", TIME_EMBED, TIME_EMBED)
    t.conv(p + "input_blocks.0.0", 4, MODEL_CHANNELS)
    chans, ch, idx, ds = [MODEL_CHANNELS], MODEL_CHANNELS, 0, 1
    for level, mult in enumerate(CHANNEL_MULT):
        idx += 1
        res_block(t, f"{p}input_blocks.{idx}.0", ch, mult * MODEL_CHANNELS)
        ch = mult * MODEL_CHANNELS
        if ds in ATTENTION_AT:
            spatial_transformer(t, f"{p}input_blocks.{idx}.1", ch)
        chans.append(ch)
        idx += 1  # the tiny UNet skips an index after each res block
        if level != len(CHANNEL_MULT) - 1:
            idx += 1
            t.conv(f"{p}input_blocks.{idx}.0.op", ch, ch)
            chans.append(ch)
            ds *= 2
    out = 0
    for level in reversed(range(len(CHANNEL_MULT))):
        mult = CHANNEL_MULT[level]
        for j in range(2):
            skip = chans.pop()
            res_block(t, f"{p}output_blocks.{out}.0", ch + skip, mult * MODEL_CHANNELS)
            ch = mult * MODEL_CHANNELS
            upsample = 1
            if ds in ATTENTION_AT:
                spatial_transformer(t, f"{p}output_blocks.{out}.1", ch)
                upsample = 2
            if level > 0 and j == 1:
                out += 1
                if out == 2:
                    upsample = 1
                t.conv(f"{p}output_blocks.{out}.{upsample}.conv", ch, ch)
                ds //= 2
            out += 1
    t.norm(p + "out.0", ch)
    t.conv(p + "out.2", MODEL_CHANNELS, 4)


def tae_block(t, name):
    for conv in ("conv.0", "conv.2", "conv.4"):
        t.conv(f"{name}.{conv}", TAE_CHANNELS, TAE_CHANNELS)


def tiny_autoencoder(t):
    """TinyDecoder and TinyEncoder (src/tae.hpp): convolutions and TAE
    blocks at fixed indices; the ReLU and Upsample steps take an index and
    no weights."""
    c = TAE_CHANNELS
    d = TAE_PREFIX + "decoder.layers."
    t.conv(d + "0", LATENT_CHANNELS, c)
    index = 2
    for _ in range(3):
        for _ in range(3):
            tae_block(t, f"{d}{index}")
            index += 1
        index += 1  # Upsample
        t.conv(f"{d}{index}", c, c, bias=False)
        index += 1
    tae_block(t, f"{d}{index}")
    t.conv(f"{d}{index + 1}", c, 3)
    e = TAE_PREFIX + "encoder.layers."
    t.conv(e + "0", 3, c)
    tae_block(t, e + "1")
    index = 2
    for _ in range(3):
        t.conv(f"{e}{index}", c, c, bias=False)  # stride 2
        index += 1
        for _ in range(3):
            tae_block(t, f"{e}{index}")
            index += 1
    t.conv(f"{e}{index}", c, LATENT_CHANNELS)


def write_model(path, seed):
    t = Tensors()
    clip_text_encoder(t)
    tiny_unet(t)
    tiny_autoencoder(t)
    header, offset = {}, 0
    for name, shape, _ in t.items:
        size = 2 * int(np.prod(shape))
        header[name] = {"dtype": "F16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # data starts 8-aligned
    block = (np.random.default_rng(seed).standard_normal(1 << 20) * 0.02).astype(np.float16)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for _, shape, kind in t.items:
            count = int(np.prod(shape))
            if kind == "norm":
                f.write(np.ones(count, dtype=np.float16).tobytes())
            elif kind == "bias":
                f.write(np.zeros(count, dtype=np.float16).tobytes())
            else:
                whole, rest = divmod(count, block.size)
                for _ in range(whole):
                    f.write(block.tobytes())
                f.write(block[:rest].tobytes())
    return sum(int(np.prod(s)) for _, s, _ in t.items)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args()
    write_model(args.out, args.seed)


if __name__ == "__main__":
    main()
