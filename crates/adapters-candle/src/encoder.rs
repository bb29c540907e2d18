//! A lean BERT encoder forward pass for the CPU.
//!
//! The matrix multiplies run on candle tensors (candle's CPU matmul is the `gemm` crate, with
//! runtime dispatch to AVX2/AVX-512 kernels and rayon threads); everything between them runs as
//! plain Rust loops over contiguous slices, fused and vectorised.
//!
//! # The math
//!
//! A batch of `n` sequences of lengths `l_1 … l_n` is *packed*: its `T = Σ l_i` tokens are the rows
//! of one `T × H` matrix, with no padding and therefore no attention mask. For each token `t` of
//! sequence `s` at position `p` with token type `y`:
//!
//! ```text
//! x_t = LayerNorm(word[id_t] + position[p] + token_type[y])
//! ```
//!
//! Then, for each of the `N` layers (heads `h = 1 … A`, head width `d = H / A`):
//!
//! ```text
//! [Q K V] = X · [W_q/√d  W_k  W_v]ᵀ + [b_q/√d  b_k  b_v]      one T × 3H matmul (fused QKV,
//!                                                             the 1/√d scale folded in at load)
//! P_s,h   = softmax_rows(Q_s,h · K_s,hᵀ)                      per sequence s and head h: l × l
//! C_s,h   = P_s,h · V_s,h                                     l × d, heads side by side → T × H
//! X'      = LayerNorm(C · W_oᵀ + b_o + X)                    bias, residual and norm in one pass
//! G       = GELU(X' · W_1ᵀ + b_1)                             bias and activation in one pass
//! X       = LayerNorm(G · W_2ᵀ + b_2 + X')                   bias, residual and norm in one pass
//! ```
//!
//! with `LayerNorm(y) = γ ⊙ (y − mean(y)) / √(var(y) + ε) + β` over each row and
//! `GELU(x) = x · Φ(x) = ½ x (1 + erf(x / √2))` (or its tanh approximation when the config asks for
//! `gelu_new`). Attention runs per sequence, so no work is spent on padding and no score is masked;
//! sequences run in parallel. Softmax subtracts the row maximum before exponentiating.
//!
//! `exp` and `erf` are evaluated with branch-free polynomial approximations (relative error
//! ≈ 1e-7, below f32 rounding of the sums they feed) so that the loops vectorise; the kernels run
//! inside [`pulp::Arch::dispatch`], which compiles them for the best instruction set the CPU has
//! (AVX-512, AVX2+FMA or the baseline) and picks one at run time.

use candle_core::{Device, IndexOp, Result, Storage, Tensor};
use candle_nn::VarBuilder;
use rayon::prelude::*;
use serde::Deserialize;

/// The subset of a Hugging Face `config.json` a BERT encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct BertConfig {
    pub(crate) vocab_size: usize,
    pub(crate) hidden_size: usize,
    pub(crate) num_hidden_layers: usize,
    pub(crate) num_attention_heads: usize,
    pub(crate) intermediate_size: usize,
    pub(crate) hidden_act: Activation,
    pub(crate) max_position_embeddings: usize,
    #[serde(default = "default_type_vocab_size")]
    pub(crate) type_vocab_size: usize,
    #[serde(default = "default_layer_norm_eps")]
    pub(crate) layer_norm_eps: f64,
    #[serde(default = "default_position_embedding_type")]
    pub(crate) position_embedding_type: String,
}

fn default_type_vocab_size() -> usize {
    2
}
fn default_layer_norm_eps() -> f64 {
    1e-12
}
fn default_position_embedding_type() -> String {
    "absolute".into()
}

/// The feed-forward activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) enum Activation {
    /// Exact GELU, `x Φ(x)` with the error function.
    #[serde(rename = "gelu")]
    Gelu,
    /// GELU's tanh approximation.
    #[serde(alias = "gelu_new", alias = "gelu_pytorch_tanh", rename = "gelu_fast")]
    GeluTanh,
    /// `max(x, 0)`.
    #[serde(rename = "relu")]
    Relu,
}

/// `y = x · wᵀ + b`, with `w` stored transposed (`in × out`, contiguous) for the matmul.
#[derive(Debug)]
struct Linear {
    wt: Tensor,
    bias: Vec<f32>,
}

impl Linear {
    fn load(vb: &VarBuilder<'_>, name: &str, out_dim: usize, in_dim: usize) -> Result<Self> {
        let w = vb.get((out_dim, in_dim), &format!("{name}.weight"))?;
        let bias = vb.get(out_dim, &format!("{name}.bias"))?.to_vec1::<f32>()?;
        Ok(Self {
            wt: w.t()?.contiguous()?,
            bias,
        })
    }

    /// Q, K and V stacked into one `H → 3H` projection, Q pre-scaled by `scale`.
    fn load_qkv(vb: &VarBuilder<'_>, hidden: usize, scale: f64) -> Result<Self> {
        let part = |name: &str| -> Result<(Tensor, Tensor)> {
            let w = vb.get((hidden, hidden), &format!("attention.self.{name}.weight"))?;
            let b = vb.get(hidden, &format!("attention.self.{name}.bias"))?;
            Ok((w, b))
        };
        let (wq, bq) = part("query")?;
        let (wk, bk) = part("key")?;
        let (wv, bv) = part("value")?;
        let w = Tensor::cat(&[(wq * scale)?, wk, wv], 0)?;
        let bias = Tensor::cat(&[(bq * scale)?, bk, bv], 0)?.to_vec1::<f32>()?;
        Ok(Self {
            wt: w.t()?.contiguous()?,
            bias,
        })
    }

    fn out_dim(&self) -> usize {
        self.bias.len()
    }
}

#[derive(Debug)]
struct LayerNorm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
    eps: f32,
}

impl LayerNorm {
    fn load(vb: &VarBuilder<'_>, name: &str, dim: usize, eps: f64) -> Result<Self> {
        Ok(Self {
            gamma: vb.get(dim, &format!("{name}.weight"))?.to_vec1()?,
            beta: vb.get(dim, &format!("{name}.bias"))?.to_vec1()?,
            eps: eps as f32,
        })
    }
}

#[derive(Debug)]
struct Layer {
    qkv: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    ff_in: Linear,
    ff_out: Linear,
    ff_norm: LayerNorm,
}

/// A loaded BERT encoder (no pooler: sentence embeddings pool the hidden states).
#[derive(Debug)]
pub(crate) struct BertEncoder {
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    embed_norm: LayerNorm,
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    activation: Activation,
    max_positions: usize,
    type_vocab: usize,
}

/// Rows of a row-major matrix handed to one parallel task.
const ROWS_PER_TASK: usize = 16;

impl BertEncoder {
    /// Loads the weights from `vb` (names with or without a `bert.` prefix).
    pub(crate) fn load(vb: VarBuilder<'_>, config: &BertConfig) -> Result<Self> {
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let h = config.hidden_size;
        if config.num_attention_heads == 0 || !h.is_multiple_of(config.num_attention_heads) {
            candle_core::bail!(
                "hidden_size {h} is not a multiple of num_attention_heads {}",
                config.num_attention_heads
            );
        }
        if config.position_embedding_type != "absolute" {
            candle_core::bail!(
                "position_embedding_type {:?} is not supported (only \"absolute\")",
                config.position_embedding_type
            );
        }
        let eps = config.layer_norm_eps;
        let head_dim = h / config.num_attention_heads;
        let emb = vb.pp("embeddings");
        let table = |name: &str, rows: usize| -> Result<Vec<f32>> {
            emb.get((rows, h), &format!("{name}.weight"))?
                .flatten_all()?
                .to_vec1()
        };
        let word = table("word_embeddings", config.vocab_size)?;
        let position = table("position_embeddings", config.max_position_embeddings)?;
        let token_type = table("token_type_embeddings", config.type_vocab_size)?;
        let embed_norm = LayerNorm::load(&emb, "LayerNorm", h, eps)?;
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let vb = vb.pp(format!("encoder.layer.{i}"));
                let inter = config.intermediate_size;
                Ok(Layer {
                    qkv: Linear::load_qkv(&vb, h, 1.0 / (head_dim as f64).sqrt())?,
                    attn_out: Linear::load(&vb, "attention.output.dense", h, h)?,
                    attn_norm: LayerNorm::load(&vb, "attention.output.LayerNorm", h, eps)?,
                    ff_in: Linear::load(&vb, "intermediate.dense", inter, h)?,
                    ff_out: Linear::load(&vb, "output.dense", h, inter)?,
                    ff_norm: LayerNorm::load(&vb, "output.LayerNorm", h, eps)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            word,
            position,
            token_type,
            embed_norm,
            layers,
            hidden: h,
            heads: config.num_attention_heads,
            activation: config.hidden_act,
            max_positions: config.max_position_embeddings,
            type_vocab: config.type_vocab_size,
        })
    }

    /// Hidden size (the width of each output row).
    pub(crate) fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// Runs the encoder over packed sequences: `ids[s]` and `types[s]` are the token ids and
    /// token-type ids of sequence `s`. Returns the last hidden states, `Σ len(ids[s])` rows of
    /// [`hidden_size`](Self::hidden_size) values, sequence after sequence.
    pub(crate) fn forward(&self, ids: &[&[u32]], types: &[&[u32]]) -> Result<Vec<f32>> {
        let lens: Vec<usize> = ids.iter().map(|s| s.len()).collect();
        let rows: usize = lens.iter().sum();
        let h = self.hidden;
        if rows == 0 {
            return Ok(Vec::new());
        }
        let matrix = |data: Vec<f32>| {
            let cols = data.len() / rows;
            Tensor::from_vec(data, (rows, cols), &Device::Cpu)
        };
        let mut x = self.embed(ids, types)?;
        for layer in &self.layers {
            let x_in = matrix(x)?;
            // Attention block.
            let qkv = x_in.matmul(&layer.qkv.wt)?;
            let qkv = map_rows(
                &qkv,
                3 * h,
                #[inline(always)]
                |out, src| add_bias(out, src, &layer.qkv.bias),
            )?;
            let ctx = matrix(self.attention(qkv, &lens)?)?;
            let proj = ctx.matmul(&layer.attn_out.wt)?;
            let x_attn = matrix(residual_norm(
                &proj,
                &layer.attn_out.bias,
                &x_in,
                &layer.attn_norm,
            )?)?;
            // Feed-forward block.
            let inter = x_attn.matmul(&layer.ff_in.wt)?;
            let act = self.activation;
            let gelu = map_rows(
                &inter,
                layer.ff_in.out_dim(),
                #[inline(always)]
                |out, src| bias_activation(out, src, &layer.ff_in.bias, act),
            )?;
            let out = matrix(gelu)?.matmul(&layer.ff_out.wt)?;
            x = residual_norm(&out, &layer.ff_out.bias, &x_attn, &layer.ff_norm)?;
        }
        Ok(x)
    }

    /// Word + position + token-type embeddings, then LayerNorm.
    fn embed(&self, ids: &[&[u32]], types: &[&[u32]]) -> Result<Vec<f32>> {
        let h = self.hidden;
        let mut tokens = Vec::new();
        for (seq, ty) in ids.iter().zip(types) {
            if seq.len() > self.max_positions {
                candle_core::bail!(
                    "sequence of {} tokens exceeds the model's {} positions",
                    seq.len(),
                    self.max_positions
                );
            }
            for (p, (&id, &t)) in seq.iter().zip(ty.iter()).enumerate() {
                if id as usize * h >= self.word.len() || t as usize >= self.type_vocab {
                    candle_core::bail!("token id {id} or type {t} outside the vocabulary");
                }
                tokens.push((id as usize, p, t as usize));
            }
        }
        let mut x = vec![0f32; tokens.len() * h];
        x.par_chunks_mut(h * ROWS_PER_TASK)
            .zip(tokens.par_chunks(ROWS_PER_TASK))
            .for_each(|(rows, toks)| {
                vectorized(
                    #[inline(always)]
                    || {
                        for (row, &(id, p, t)) in rows.chunks_exact_mut(h).zip(toks) {
                            let w = &self.word[id * h..(id + 1) * h];
                            let pe = &self.position[p * h..(p + 1) * h];
                            let te = &self.token_type[t * h..(t + 1) * h];
                            for (((o, &a), &b), &c) in row.iter_mut().zip(w).zip(pe).zip(te) {
                                *o = a + b + c;
                            }
                            layer_norm_in_place(row, &self.embed_norm);
                        }
                    },
                )
            });
        Ok(x)
    }

    /// Multi-head self-attention per sequence over the packed `T × 3H` QKV rows; returns the
    /// `T × H` context rows.
    fn attention(&self, qkv: Vec<f32>, lens: &[usize]) -> Result<Vec<f32>> {
        let h = self.hidden;
        let heads = self.heads;
        let d = h / heads;
        let rows = qkv.len() / (3 * h);
        let qkv = Tensor::from_vec(qkv, (rows, 3, heads, d), &Device::Cpu)?;
        let mut starts = Vec::with_capacity(lens.len());
        let mut offset = 0;
        for &l in lens {
            starts.push((offset, l));
            offset += l;
        }
        let mut ctx = vec![0f32; rows * h];
        // Disjoint row blocks of the context, one per sequence.
        let mut blocks = Vec::with_capacity(lens.len());
        let mut rest = ctx.as_mut_slice();
        for &l in lens {
            let (block, tail) = rest.split_at_mut(l * h);
            blocks.push(block);
            rest = tail;
        }
        blocks.into_par_iter().zip(starts.par_iter()).try_for_each(
            |(out, &(start, l))| -> Result<()> {
                let block = qkv.narrow(0, start, l)?; // l × 3 × A × d
                for head in 0..heads {
                    // One head at a time keeps its l × l scores in the core's cache.
                    let q = block.i((.., 0, head))?; // l × d (strided view)
                    let k = block.i((.., 1, head))?;
                    let v = block.i((.., 2, head))?;
                    let scores = q.matmul(&k.t()?)?; // l × l
                    let probs = softmax(&scores, l)?;
                    let probs = Tensor::from_vec(probs, (l, l), &Device::Cpu)?;
                    let head_ctx = probs.matmul(&v)?; // l × d
                    with_data(&head_ctx, |src| {
                        for (row, src) in out.chunks_exact_mut(h).zip(src.chunks_exact(d)) {
                            row[head * d..(head + 1) * d].copy_from_slice(src);
                        }
                    })?;
                }
                Ok(())
            },
        )?;
        Ok(ctx)
    }
}

/// Runs `f` compiled for the best instruction set of this CPU.
#[inline(always)]
fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    struct Op<F>(F);
    impl<R, F: FnOnce() -> R> pulp::WithSimd for Op<F> {
        type Output = R;
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _simd: S) -> R {
            (self.0)()
        }
    }
    pulp::Arch::new().dispatch(Op(f))
}

/// The contiguous f32 data behind a tensor's storage guard.
fn cpu_slice<'a>(
    (storage, layout): &'a (candle_core::StorageRef<'_>, &candle_core::Layout),
) -> Result<&'a [f32]> {
    let Storage::Cpu(cpu) = &**storage else {
        candle_core::bail!("the encoder runs on the CPU only");
    };
    let data = cpu.as_slice::<f32>()?;
    match layout.contiguous_offsets() {
        Some((from, to)) => Ok(&data[from..to]),
        None => candle_core::bail!("expected a contiguous tensor"),
    }
}

/// Calls `f` on the contiguous f32 data of `t`.
fn with_data<R>(t: &Tensor, f: impl FnOnce(&[f32]) -> R) -> Result<R> {
    let guard = t.storage_and_layout();
    Ok(f(cpu_slice(&guard)?))
}

/// A new row-major matrix with `f(out_row_block, src_row_block)` applied to blocks of
/// [`ROWS_PER_TASK`] rows of `cols` columns, in parallel.
fn map_rows(src: &Tensor, cols: usize, f: impl Fn(&mut [f32], &[f32]) + Sync) -> Result<Vec<f32>> {
    with_data(src, |src| {
        let mut out = vec![0f32; src.len()];
        out.par_chunks_mut(cols * ROWS_PER_TASK)
            .zip(src.par_chunks(cols * ROWS_PER_TASK))
            .for_each(|(o, s)| {
                vectorized(
                    #[inline(always)]
                    || f(o, s),
                )
            });
        out
    })
}

/// Row-wise softmax of a matrix of `cols` columns, sequentially (the caller is already parallel).
fn softmax(src: &Tensor, cols: usize) -> Result<Vec<f32>> {
    with_data(src, |src| {
        let mut out = vec![0f32; src.len()];
        vectorized(
            #[inline(always)]
            || {
                for (o, s) in out.chunks_exact_mut(cols).zip(src.chunks_exact(cols)) {
                    softmax_row(o, s);
                }
            },
        );
        out
    })
}

/// `LayerNorm(src + bias + residual)` row by row.
fn residual_norm(
    src: &Tensor,
    bias: &[f32],
    residual: &Tensor,
    norm: &LayerNorm,
) -> Result<Vec<f32>> {
    let cols = bias.len();
    let residual = residual.storage_and_layout();
    let residual = cpu_slice(&residual)?;
    with_data(src, |src| {
        let mut out = vec![0f32; src.len()];
        out.par_chunks_mut(cols * ROWS_PER_TASK)
            .zip(src.par_chunks(cols * ROWS_PER_TASK))
            .zip(residual.par_chunks(cols * ROWS_PER_TASK))
            .for_each(|((o, s), r)| {
                vectorized(
                    #[inline(always)]
                    || {
                        for ((o, s), r) in o
                            .chunks_exact_mut(cols)
                            .zip(s.chunks_exact(cols))
                            .zip(r.chunks_exact(cols))
                        {
                            for (((o, &s), &b), &r) in o.iter_mut().zip(s).zip(bias).zip(r) {
                                *o = s + b + r;
                            }
                            layer_norm_in_place(o, norm);
                        }
                    },
                )
            });
        out
    })
}

/// Lanes of the partial sums and maxima: wide enough for AVX-512, so reductions vectorise.
const LANES: usize = 16;

#[inline(always)]
fn sum(xs: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += x;
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[inline(always)]
fn max(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |m, &x| m.max(x));
    for c in chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a = a.max(x);
        }
    }
    acc.iter().fold(tail, |m, &x| m.max(x))
}

#[inline(always)]
fn layer_norm_in_place(row: &mut [f32], norm: &LayerNorm) {
    let n = row.len() as f32;
    let mean = sum(row) / n;
    for x in row.iter_mut() {
        *x -= mean;
    }
    let mut sq = [0f32; LANES];
    for c in row.chunks_exact(LANES) {
        for (a, &x) in sq.iter_mut().zip(c) {
            *a += x * x;
        }
    }
    let tail: f32 = row
        .chunks_exact(LANES)
        .remainder()
        .iter()
        .map(|x| x * x)
        .sum();
    let var = (sq.iter().sum::<f32>() + tail) / n;
    let inv = 1.0 / (var + norm.eps).sqrt();
    for ((x, &g), &b) in row.iter_mut().zip(&norm.gamma).zip(&norm.beta) {
        *x = *x * inv * g + b;
    }
}

#[inline(always)]
fn add_bias(out: &mut [f32], src: &[f32], bias: &[f32]) {
    for (o, s) in out
        .chunks_exact_mut(bias.len())
        .zip(src.chunks_exact(bias.len()))
    {
        for ((o, &s), &b) in o.iter_mut().zip(s).zip(bias) {
            *o = s + b;
        }
    }
}

#[inline(always)]
fn bias_activation(out: &mut [f32], src: &[f32], bias: &[f32], act: Activation) {
    for (o, s) in out
        .chunks_exact_mut(bias.len())
        .zip(src.chunks_exact(bias.len()))
    {
        match act {
            Activation::Gelu => {
                for ((o, &s), &b) in o.iter_mut().zip(s).zip(bias) {
                    *o = gelu_erf(s + b);
                }
            }
            Activation::GeluTanh => {
                for ((o, &s), &b) in o.iter_mut().zip(s).zip(bias) {
                    *o = gelu_tanh(s + b);
                }
            }
            Activation::Relu => {
                for ((o, &s), &b) in o.iter_mut().zip(s).zip(bias) {
                    *o = (s + b).max(0.0);
                }
            }
        }
    }
}

/// `out = softmax(src)` over one row.
#[inline(always)]
fn softmax_row(out: &mut [f32], src: &[f32]) {
    let m = max(src);
    for (o, &s) in out.iter_mut().zip(src) {
        *o = exp(s - m);
    }
    let inv = 1.0 / sum(out);
    for o in out.iter_mut() {
        *o *= inv;
    }
}

/// `eˣ` without branches, so loops over it vectorise.
///
/// Range reduction `x = n ln2 + r` with `|r| ≤ ln2/2` (ln2 split in a high part exact in f32 and a
/// low correction), `eʳ` by a degree-7 polynomial (Cephes' `expf` coefficients), and `2ⁿ` built
/// in the exponent bits. Inputs are clamped to `[-87, 88]`, where the result is a normal f32;
/// relative error about 1e-7.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // 1.5 · 2²³: adding and subtracting it rounds to the nearest integer.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    // y = ROUND + n exactly, so n sits in the low bits of y's mantissa.
    let y = x * LOG2_E + ROUND;
    let n = y - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let mut p = 1.987_569_1e-4;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let er = p * r * r + r + 1.0;
    // 2ⁿ: the biased exponent n + 127 in the exponent field (integer ops only, so it vectorises).
    let n_bits = y.to_bits().wrapping_sub(ROUND.to_bits());
    let scale = f32::from_bits(n_bits.wrapping_add(127) << 23);
    er * scale
}

/// `erf(x)` without branches: `x · P(x²) / Q(x²)` on `x` clamped to `[-4, 4]` (beyond it erf is
/// ±1 in f32), with the rational approximation used by Eigen and XLA; absolute error below 1e-6
/// (checked by a test against a series in f64).
#[inline(always)]
pub(crate) fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10;
    p = p * x2 + 2.770_681_4e-8;
    p = p * x2 + -2.101_024e-6;
    p = p * x2 + -5.692_506_4e-5;
    p = p * x2 + -7.349_906_3e-4;
    p = p * x2 + -2.954_600_1e-3;
    p = p * x2 + -1.609_603_3e-2;
    let mut q = -1.456_607_2e-5;
    q = q * x2 + -2.133_740_6e-4;
    q = q * x2 + -1.682_827e-3;
    q = q * x2 + -7.373_329_5e-3;
    q = q * x2 + -1.426_474e-2;
    x * p / q
}

/// `x Φ(x) = ½ x (1 + erf(x / √2))`.
#[inline(always)]
fn gelu_erf(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// `½ x (1 + tanh(√(2/π) (x + 0.044715 x³)))`, with `tanh(u) = 1 − 2 / (e^{2u} + 1)`.
#[inline(always)]
fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    let u = SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x);
    let tanh = 1.0 - 2.0 / (exp(2.0 * u) + 1.0);
    0.5 * x * (1.0 + tanh)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf by its Maclaurin series in f64 (exact enough for |x| ≤ 4), 1 beyond.
    fn erf_reference(x: f64) -> f64 {
        if x.abs() > 4.0 {
            return x.signum();
        }
        let mut term = x;
        let mut total = x;
        for n in 1..200 {
            term *= -x * x / n as f64;
            total += term / (2 * n + 1) as f64;
        }
        total * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn fast_exp_is_accurate() {
        let mut worst = 0f64;
        for i in -8000..=8000 {
            let x = i as f32 / 100.0;
            let exact = (x as f64).exp();
            let rel = ((exp(x) as f64 - exact) / exact).abs();
            worst = worst.max(rel);
        }
        assert!(worst < 5e-7, "worst relative error {worst}");
        assert!(exp(-1000.0) < 1e-37 && exp(-1000.0) >= 0.0);
    }

    #[test]
    fn fast_erf_is_accurate() {
        let mut worst = 0f64;
        for i in -6000..=6000 {
            let x = i as f32 / 1000.0;
            worst = worst.max((erf(x) as f64 - erf_reference(x as f64)).abs());
        }
        assert!(worst < 1e-6, "worst absolute error {worst}");
    }

    #[test]
    fn softmax_rows_sum_to_one() {
        let src: Vec<f32> = (0..37).map(|i| (i as f32 * 0.7).sin() * 30.0).collect();
        let mut out = vec![0f32; src.len()];
        softmax_row(&mut out, &src);
        let m = src.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let z: f64 = src.iter().map(|&s| ((s - m) as f64).exp()).sum();
        for (o, &s) in out.iter().zip(&src) {
            let exact = ((s - m) as f64).exp() / z;
            assert!((*o as f64 - exact).abs() < 1e-6);
        }
    }
}
