#!/usr/bin/env python3
"""Writes a tiny random-weight whisper model in whisper.cpp's ggml format.

    tests/models/make_tiny_whisper.py OUT.bin [--seed N] [--state N] [--heads N] [--layers N]

The layout is the one whisper.cpp's loader reads (src/whisper.cpp,
whisper_model_load, v1.8.2): the "ggml" magic, eleven int32 hyper-parameters,
the mel filter bank, the vocabulary, then each tensor as
(n_dims, name length, type, dims innermost first, name, data).

What is real: the audio front end (80 mel bins over a 400-point FFT at
16 kHz, 1500 audio positions for 30 s windows, a Slaney mel filter bank) and
the English vocabulary's layout (51864 ids, 50257 text tokens, the special
tokens after them), so whisper.cpp treats it as an English-only model.
What is tiny: one encoder and one decoder layer of width 64, two heads (the
defaults; --state 512 --heads 8 --layers 6 gives whisper base's shape, for
measuring memory). The weights are random (seeded), so transcripts are nonsense, and a
file is about 8 MB: made at test time, never committed (issue #31).
"""
import argparse
import struct

import numpy as np

SAMPLE_RATE = 16000
N_FFT = 400
N_MELS = 80
N_AUDIO_CTX = 1500  # 30 s of 10 ms frames, halved by conv2's stride
N_TEXT_CTX = 448
N_VOCAB = 51864  # English-only: 50257 text tokens + the specials
N_TEXT_TOKENS = 50257
GGML_MAGIC = 0x67676D6C  # "ggml"
F32, F16 = 0, 1


def hz_to_mel(f):
    # Slaney: linear below 1 kHz, logarithmic above.
    f = np.asarray(f, dtype=np.float64)
    mel = f / (200.0 / 3)
    log_part = 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0) / (np.log(6.4) / 27.0)
    return np.where(f >= 1000.0, log_part, mel)


def mel_to_hz(m):
    m = np.asarray(m, dtype=np.float64)
    lin = m * (200.0 / 3)
    log_part = 1000.0 * np.exp((np.log(6.4) / 27.0) * (m - 15.0))
    return np.where(m >= 15.0, log_part, lin)


def mel_filters():
    """(N_MELS, N_FFT/2+1) triangular filters, Slaney-normalised."""
    n_bins = N_FFT // 2 + 1
    fft_freqs = np.linspace(0, SAMPLE_RATE / 2, n_bins)
    mel_points = np.linspace(hz_to_mel(0.0), hz_to_mel(SAMPLE_RATE / 2), N_MELS + 2)
    hz_points = mel_to_hz(mel_points)
    weights = np.zeros((N_MELS, n_bins))
    for i in range(N_MELS):
        lower = (fft_freqs - hz_points[i]) / (hz_points[i + 1] - hz_points[i])
        upper = (hz_points[i + 2] - fft_freqs) / (hz_points[i + 2] - hz_points[i + 1])
        weights[i] = np.maximum(0, np.minimum(lower, upper))
        weights[i] *= 2.0 / (hz_points[i + 2] - hz_points[i])
    return weights.astype(np.float32)


def vocabulary():
    """The text tokens' bytes: the 256 single bytes, then short words."""
    tokens = [bytes([b]) for b in range(256)]
    syllables = [b"ka", b"lo", b"mi", b"ne", b"su", b"ta", b"ro", b"vi"]
    i = 0
    while len(tokens) < N_TEXT_TOKENS:
        word = b" " + syllables[i % 8] + syllables[(i // 8) % 8] + str(i // 64).encode()
        tokens.append(word)
        i += 1
    return tokens


def tensors(state, layers, rng):
    """(name, array, type) in whisper.cpp's order; arrays in PyTorch's shape."""
    def w(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    def ones(n):
        return np.ones(n, dtype=np.float32)

    def zeros(n):
        return np.zeros(n, dtype=np.float32)

    out = [
        ("encoder.positional_embedding", w(N_AUDIO_CTX, state), F32),
        ("encoder.conv1.weight", w(state, N_MELS, 3), F16),
        ("encoder.conv1.bias", zeros(state).reshape(state, 1), F32),
        ("encoder.conv2.weight", w(state, state, 3), F16),
        ("encoder.conv2.bias", zeros(state).reshape(state, 1), F32),
        ("encoder.ln_post.weight", ones(state), F32),
        ("encoder.ln_post.bias", zeros(state), F32),
    ]

    def block(prefix, attn_names):
        items = [
            (f"{prefix}.mlp_ln.weight", ones(state), F32),
            (f"{prefix}.mlp_ln.bias", zeros(state), F32),
            (f"{prefix}.mlp.0.weight", w(4 * state, state), F16),
            (f"{prefix}.mlp.0.bias", zeros(4 * state), F32),
            (f"{prefix}.mlp.2.weight", w(state, 4 * state), F16),
            (f"{prefix}.mlp.2.bias", zeros(state), F32),
        ]
        for attn in attn_names:
            items += [
                (f"{prefix}.{attn}_ln.weight", ones(state), F32),
                (f"{prefix}.{attn}_ln.bias", zeros(state), F32),
                (f"{prefix}.{attn}.query.weight", w(state, state), F16),
                (f"{prefix}.{attn}.query.bias", zeros(state), F32),
                (f"{prefix}.{attn}.key.weight", w(state, state), F16),
                (f"{prefix}.{attn}.value.weight", w(state, state), F16),
                (f"{prefix}.{attn}.value.bias", zeros(state), F32),
                (f"{prefix}.{attn}.out.weight", w(state, state), F16),
                (f"{prefix}.{attn}.out.bias", zeros(state), F32),
            ]
        return items

    for i in range(layers):
        out += block(f"encoder.blocks.{i}", ["attn"])
    out += [
        ("decoder.positional_embedding", w(N_TEXT_CTX, state), F32),
        ("decoder.token_embedding.weight", w(N_VOCAB, state), F16),
        ("decoder.ln.weight", ones(state), F32),
        ("decoder.ln.bias", zeros(state), F32),
    ]
    for i in range(layers):
        out += block(f"decoder.blocks.{i}", ["attn", "cross_attn"])
    return out


def write_model(path, state, heads, layers, seed):
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        f.write(struct.pack("<I", GGML_MAGIC))
        # n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer,
        # n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, ftype
        f.write(struct.pack("<11i", N_VOCAB, N_AUDIO_CTX, state, heads, layers, N_TEXT_CTX,
                            state, heads, layers, N_MELS, F16))
        filters = mel_filters()
        f.write(struct.pack("<2i", filters.shape[0], filters.shape[1]))
        f.write(filters.tobytes())
        vocab = vocabulary()
        f.write(struct.pack("<i", len(vocab)))
        for token in vocab:
            f.write(struct.pack("<I", len(token)))
            f.write(token)
        for name, data, ttype in tensors(state, layers, rng):
            encoded = name.encode()
            f.write(struct.pack("<3i", data.ndim, len(encoded), ttype))
            f.write(struct.pack(f"<{data.ndim}i", *reversed(data.shape)))
            f.write(encoded)
            f.write(data.astype(np.float16 if ttype == F16 else np.float32).tobytes())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--state", type=int, default=64, help="model width (a multiple of heads)")
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--layers", type=int, default=1, help="encoder and decoder layers each")
    args = parser.parse_args()
    if args.state % args.heads != 0:
        parser.error("--state must be a multiple of --heads")
    write_model(args.out, args.state, args.heads, args.layers, args.seed)


if __name__ == "__main__":
    main()
