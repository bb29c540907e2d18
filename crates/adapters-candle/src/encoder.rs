//! A lean BERT encoder forward pass for the CPU.
//!
//! The four projections of each layer run as candle matmuls (candle's CPU matmul is the `gemm`
//! crate, with runtime dispatch to AVX2/AVX-512 kernels and rayon threads); everything else runs
//! as plain Rust over contiguous slices, fused and vectorised, *in place* in the matmul outputs
//! (candle's in-place custom ops), so the matmuls are the only allocations of a layer.
//! Attention is a kernel of its own ([`HeadAttention`]): per sequence and head, scores, softmax
//! and context stay in the core's cache, with no matmul call (candle's per-call overhead, which
//! includes reading `/proc/cpuinfo` for its thread count, and gemm's nested threading cost more
//! than these small products).
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
//!                                                             (one fused kernel per s and h)
//! X'      = LayerNorm(C · W_oᵀ + b_o + X)                    bias, residual and norm in one pass
//! G       = GELU(X' · W_1ᵀ + b_1)                             bias and activation in one pass
//! X       = LayerNorm(G · W_2ᵀ + b_2 + X')                   bias, residual and norm in one pass
//! ```
//!
//! with `LayerNorm(y) = γ ⊙ (y − mean(y)) / √(var(y) + ε) + β` over each row and
//! `GELU(x) = x · Φ(x) = ½ x (1 + erf(x / √2))` (or its tanh approximation when the config asks for
//! `gelu_new`). Attention runs per sequence, so no work is spent on padding and no score is masked;
//! sequences and heads run in parallel. Softmax subtracts the row maximum before exponentiating.
//!
//! `exp` and `erf` are evaluated with branch-free polynomial approximations (relative error
//! ≈ 1e-7, below f32 rounding of the sums they feed) so that the loops vectorise; the kernels run
//! inside [`pulp::Arch::dispatch`], which compiles them for the best instruction set the CPU has
//! (AVX-512, AVX2+FMA or the baseline) and picks one at run time.

use candle_core::{Device, Layout, Result, Tensor};
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
    ///
    /// Only the matrix multiplies allocate: every other step writes into a matmul's output in
    /// place (candle's in-place custom ops), and the attention context is one buffer reused by
    /// every layer.
    pub(crate) fn forward(&self, ids: &[&[u32]], types: &[&[u32]]) -> Result<Vec<f32>> {
        let lens: Vec<usize> = ids.iter().map(|s| s.len()).collect();
        let rows: usize = lens.iter().sum();
        let h = self.hidden;
        if rows == 0 {
            return Ok(Vec::new());
        }
        let mut x = Tensor::from_vec(self.embed(ids, types)?, (rows, h), &Device::Cpu)?;
        let ctx = Tensor::zeros((rows, h), candle_core::DType::F32, &Device::Cpu)?;
        let act = self.activation;
        for layer in &self.layers {
            // Attention block; the QKV bias is added as the heads gather their Q, K and V.
            let qkv = x.matmul(&layer.qkv.wt)?;
            update_from(&ctx, &qkv, |ctx, qkv| {
                self.attention(qkv, &layer.qkv.bias, &lens, ctx)
            })?;
            let x_attn = ctx.matmul(&layer.attn_out.wt)?;
            update_from(&x_attn, &x, |out, residual| {
                residual_norm(out, &layer.attn_out.bias, residual, &layer.attn_norm);
            })?;
            // Feed-forward block.
            let inter = x_attn.matmul(&layer.ff_in.wt)?;
            update(&inter, |out| {
                map_rows(
                    out,
                    layer.ff_in.out_dim(),
                    #[inline(always)]
                    |rows| bias_activation(rows, &layer.ff_in.bias, act),
                )
            })?;
            let out = inter.matmul(&layer.ff_out.wt)?;
            update_from(&out, &x_attn, |out, residual| {
                residual_norm(out, &layer.ff_out.bias, residual, &layer.ff_norm);
            })?;
            x = out;
        }
        x.flatten_all()?.to_vec1()
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

    /// Multi-head self-attention per sequence over the packed `T × 3H` QKV rows (without their
    /// bias, added here); writes the `T × H` context rows into `ctx`.
    ///
    /// One task per (sequence, head), in parallel: each gathers its head's Q, K and V and runs
    /// [`HeadAttention`] on them, all within the core's cache.
    fn attention(&self, qkv: &[f32], bias: &[f32], lens: &[usize], ctx: &mut [f32]) {
        let h = self.hidden;
        let heads = self.heads;
        let d = h / heads;
        let mut starts = Vec::with_capacity(lens.len());
        let mut offset = 0;
        for &l in lens {
            starts.push(offset);
            offset += l;
        }
        let outputs: Vec<Vec<f32>> = (0..lens.len() * heads)
            .into_par_iter()
            .map(|task| {
                let (s, head) = (task / heads, task % heads);
                let (start, l) = (starts[s], lens[s]);
                pulp::Arch::new().dispatch(HeadAttention {
                    qkv: &qkv[start * 3 * h..(start + l) * 3 * h],
                    bias,
                    hidden: h,
                    offset: head * d,
                    d,
                })
            })
            .collect();
        // Disjoint row blocks of the context, one per sequence, filled from its heads' outputs.
        let mut blocks = Vec::with_capacity(lens.len());
        let mut rest = ctx;
        for &l in lens {
            let (block, tail) = rest.split_at_mut(l * h);
            blocks.push(block);
            rest = tail;
        }
        blocks
            .into_par_iter()
            .zip(outputs.par_chunks(heads))
            .for_each(|(block, outs)| {
                for (head, out) in outs.iter().enumerate() {
                    if out.is_empty() {
                        continue;
                    }
                    let dp = out.len() / (block.len() / h);
                    for (row, src) in block.chunks_exact_mut(h).zip(out.chunks_exact(dp)) {
                        row[head * d..(head + 1) * d].copy_from_slice(&src[..d]);
                    }
                }
            });
    }
}

/// Query rows per attention micro-tile.
const QUERY_ROWS: usize = 6;

/// Attention of one head over one sequence, with explicit SIMD (`S::f32s` vectors of `n` lanes):
///
/// 1. gather (and add the bias to) `Q` as tiles of [`QUERY_ROWS`] rows, transposed, `Kᵀ` as
///    tiles of `2n` keys (zero-padded) and `V` as rows of `dp` values (`d` padded to `2n`);
/// 2. for each tile of query rows: scores `Q_tile · Kᵀ` with `QUERY_ROWS × 2` vector
///    accumulators per tile of keys, softmax of each row, then `P_tile · V` with
///    `QUERY_ROWS × 2` accumulators per pair of output vectors.
///
/// Returns the `l × dp` context rows of the head (`l` rounded up to whole tiles).
struct HeadAttention<'a> {
    /// The sequence's `l × 3H` QKV rows.
    qkv: &'a [f32],
    /// The `3H` QKV bias.
    bias: &'a [f32],
    hidden: usize,
    /// First column of the head within Q (and within K and V, after `hidden` and `2 hidden`).
    offset: usize,
    d: usize,
}

impl pulp::WithSimd for HeadAttention<'_> {
    type Output = Vec<f32>;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) -> Vec<f32> {
        const R: usize = QUERY_ROWS;
        let Self {
            qkv,
            bias,
            hidden,
            offset,
            d,
        } = self;
        let n = S::F32_LANES;
        let cols = 3 * hidden;
        let l = qkv.len() / cols;
        let tiles = l.div_ceil(R);
        let key_tile = 2 * n;
        let lp = l.div_ceil(key_tile) * key_tile;
        let dp = d.div_ceil(key_tile) * key_tile;
        let (bq, bk, bv) = (
            &bias[offset..offset + d],
            &bias[hidden + offset..hidden + offset + d],
            &bias[2 * hidden + offset..2 * hidden + offset + d],
        );
        // Q tiles: [tile][c][r]; Kᵀ tiles: [key tile][c][2n keys]; V: [key][dp].
        let mut q = vec![0f32; tiles * R * d];
        let mut kt = vec![0f32; lp * d];
        let mut v = vec![0f32; lp * dp];
        for (i, row) in qkv.chunks_exact(cols).enumerate() {
            let tile = &mut q[(i / R) * R * d..(i / R + 1) * R * d];
            for (c, (&x, &b)) in row[offset..offset + d].iter().zip(bq).enumerate() {
                tile[c * R + i % R] = x + b;
            }
            let ktile = &mut kt[(i / key_tile) * key_tile * d..(i / key_tile + 1) * key_tile * d];
            let k = &row[hidden + offset..hidden + offset + d];
            for (c, (&x, &b)) in k.iter().zip(bk).enumerate() {
                ktile[c * key_tile + i % key_tile] = x + b;
            }
            let vrow = &row[2 * hidden + offset..2 * hidden + offset + d];
            for ((o, &x), &b) in v[i * dp..i * dp + d].iter_mut().zip(vrow).zip(bv) {
                *o = x + b;
            }
        }
        let kt = S::as_simd_f32s(&kt).0;
        let v = S::as_simd_f32s(&v).0;
        let dpv = dp / n;
        let mut scores = vec![0f32; R * lp];
        let mut out = vec![0f32; tiles * R * dp];
        let zero = simd.splat_f32s(0.0);
        for (qtile, out_tile) in q.chunks_exact(R * d).zip(out.chunks_exact_mut(R * dp)) {
            // Scores of R query rows against all keys.
            {
                let (score_v, _) = S::as_mut_simd_f32s(&mut scores);
                let lpv = lp / n;
                for (t, ktile) in kt.chunks_exact(2 * d).enumerate() {
                    let mut acc = [[zero; 2]; R];
                    for (k, qc) in ktile.chunks_exact(2).zip(qtile.chunks_exact(R)) {
                        for (a, &qr) in acc.iter_mut().zip(qc) {
                            let qr = simd.splat_f32s(qr);
                            a[0] = simd.mul_add_e_f32s(qr, k[0], a[0]);
                            a[1] = simd.mul_add_e_f32s(qr, k[1], a[1]);
                        }
                    }
                    for (r, a) in acc.iter().enumerate() {
                        score_v[r * lpv + 2 * t] = a[0];
                        score_v[r * lpv + 2 * t + 1] = a[1];
                    }
                }
            }
            for row in scores.chunks_exact_mut(lp) {
                softmax_in_place(&mut row[..l]);
            }
            // Context: P (R × l) · V (l × dp), two output vectors at a time.
            let p: [&[f32]; R] = std::array::from_fn(|r| &scores[r * lp..r * lp + l]);
            let (out_v, _) = S::as_mut_simd_f32s(out_tile);
            for c in (0..dpv).step_by(2) {
                let mut acc = [[zero; 2]; R];
                for (j, vj) in v.chunks_exact(dpv).take(l).enumerate() {
                    let (v0, v1) = (vj[c], vj[c + 1]);
                    for (a, pr) in acc.iter_mut().zip(&p) {
                        let pr = simd.splat_f32s(pr[j]);
                        a[0] = simd.mul_add_e_f32s(pr, v0, a[0]);
                        a[1] = simd.mul_add_e_f32s(pr, v1, a[1]);
                    }
                }
                for (r, a) in acc.iter().enumerate() {
                    out_v[r * dpv + c] = a[0];
                    out_v[r * dpv + c + 1] = a[1];
                }
            }
        }
        out.truncate(l * dp);
        out
    }
}

/// Calls `f` on the contiguous f32 data of `t`, in place (a candle in-place custom op).
fn update(t: &Tensor, f: impl Fn(&mut [f32])) -> Result<()> {
    struct Op<F>(F);
    impl<F: Fn(&mut [f32])> candle_core::InplaceOp1 for Op<F> {
        fn name(&self) -> &'static str {
            "zhiku-update"
        }
        fn cpu_fwd(&self, storage: &mut candle_core::CpuStorage, layout: &Layout) -> Result<()> {
            (self.0)(cpu_slice_mut(storage, layout)?);
            Ok(())
        }
    }
    t.inplace_op1(&Op(f))
}

/// Calls `f` on the contiguous f32 data of `t`, in place, and that of `src`.
fn update_from(t: &Tensor, src: &Tensor, f: impl Fn(&mut [f32], &[f32])) -> Result<()> {
    struct Op<F>(F);
    impl<F: Fn(&mut [f32], &[f32])> candle_core::InplaceOp2 for Op<F> {
        fn name(&self) -> &'static str {
            "zhiku-update-from"
        }
        fn cpu_fwd(
            &self,
            dst: &mut candle_core::CpuStorage,
            dst_layout: &Layout,
            src: &candle_core::CpuStorage,
            src_layout: &Layout,
        ) -> Result<()> {
            let src = match src {
                candle_core::CpuStorage::F32(data) => contiguous(data, src_layout)?,
                _ => candle_core::bail!("expected f32 data"),
            };
            (self.0)(cpu_slice_mut(dst, dst_layout)?, src);
            Ok(())
        }
    }
    t.inplace_op2(src, &Op(f))
}

fn contiguous<'a>(data: &'a [f32], layout: &Layout) -> Result<&'a [f32]> {
    match layout.contiguous_offsets() {
        Some((from, to)) => Ok(&data[from..to]),
        None => candle_core::bail!("expected a contiguous tensor"),
    }
}

fn cpu_slice_mut<'a>(
    storage: &'a mut candle_core::CpuStorage,
    layout: &Layout,
) -> Result<&'a mut [f32]> {
    let candle_core::CpuStorage::F32(data) = storage else {
        candle_core::bail!("expected f32 data");
    };
    match layout.contiguous_offsets() {
        Some((from, to)) => Ok(&mut data[from..to]),
        None => candle_core::bail!("expected a contiguous tensor"),
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

/// `f(row_block)` on blocks of [`ROWS_PER_TASK`] rows of `cols` columns, in parallel.
fn map_rows(data: &mut [f32], cols: usize, f: impl Fn(&mut [f32]) + Sync) {
    data.par_chunks_mut(cols * ROWS_PER_TASK).for_each(|rows| {
        vectorized(
            #[inline(always)]
            || f(rows),
        )
    });
}

/// `x ← LayerNorm(x + bias + residual)` row by row.
fn residual_norm(x: &mut [f32], bias: &[f32], residual: &[f32], norm: &LayerNorm) {
    let cols = bias.len();
    x.par_chunks_mut(cols * ROWS_PER_TASK)
        .zip(residual.par_chunks(cols * ROWS_PER_TASK))
        .for_each(|(x, r)| {
            vectorized(
                #[inline(always)]
                || {
                    for (x, r) in x.chunks_exact_mut(cols).zip(r.chunks_exact(cols)) {
                        for ((x, &b), &r) in x.iter_mut().zip(bias).zip(r) {
                            *x += b + r;
                        }
                        layer_norm_in_place(x, norm);
                    }
                },
            )
        });
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
fn bias_activation(rows: &mut [f32], bias: &[f32], act: Activation) {
    for row in rows.chunks_exact_mut(bias.len()) {
        match act {
            Activation::Gelu => {
                for (x, &b) in row.iter_mut().zip(bias) {
                    *x = gelu_erf(*x + b);
                }
            }
            Activation::GeluTanh => {
                for (x, &b) in row.iter_mut().zip(bias) {
                    *x = gelu_tanh(*x + b);
                }
            }
            Activation::Relu => {
                for (x, &b) in row.iter_mut().zip(bias) {
                    *x = (*x + b).max(0.0);
                }
            }
        }
    }
}

/// `row ← softmax(row)`.
#[inline(always)]
fn softmax_in_place(row: &mut [f32]) {
    let m = max(row);
    for x in row.iter_mut() {
        *x = exp(*x - m);
    }
    let inv = 1.0 / sum(row);
    for x in row.iter_mut() {
        *x *= inv;
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

    /// One head's attention in f64, straight from the definition, with the bias added.
    fn attention_reference(
        qkv: &[f32],
        bias: &[f32],
        hidden: usize,
        offset: usize,
        d: usize,
    ) -> Vec<f64> {
        let cols = 3 * hidden;
        let l = qkv.len() / cols;
        let at = |i: usize, part: usize, c: usize| {
            let col = part * hidden + offset + c;
            (qkv[i * cols + col] + bias[col]) as f64
        };
        let mut out = vec![0f64; l * d];
        for i in 0..l {
            let scores: Vec<f64> = (0..l)
                .map(|j| (0..d).map(|c| at(i, 0, c) * at(j, 1, c)).sum())
                .collect();
            let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let z: f64 = scores.iter().map(|s| (s - m).exp()).sum();
            for (j, s) in scores.iter().enumerate() {
                let p = (s - m).exp() / z;
                for c in 0..d {
                    out[i * d + c] += p * at(j, 2, c);
                }
            }
        }
        out
    }

    #[test]
    fn attention_kernel_matches_the_definition_on_every_instruction_set() {
        // Lengths and head widths that fill no tile exactly, and some that do.
        for (l, d) in [(1, 32), (7, 32), (37, 32), (64, 32), (50, 20), (33, 64)] {
            let heads = 3;
            let hidden = heads * d;
            let qkv: Vec<f32> = (0..l * 3 * hidden)
                .map(|i| ((i * 7919 % 1000) as f32 / 1000.0 - 0.5) * 2.0)
                .collect();
            let bias: Vec<f32> = (0..3 * hidden)
                .map(|i| (i as f32 * 0.37).sin() * 0.3)
                .collect();
            for head in 0..heads {
                let op = || HeadAttention {
                    qkv: &qkv,
                    bias: &bias,
                    hidden,
                    offset: head * d,
                    d,
                };
                let expected = attention_reference(&qkv, &bias, hidden, head * d, d);
                let mut results = vec![
                    ("dispatch", pulp::Arch::new().dispatch(op())),
                    ("scalar", pulp::Simd::vectorize(pulp::Scalar::new(), op())),
                ];
                #[cfg(target_arch = "x86_64")]
                if let Some(simd) = pulp::x86::V3::try_new() {
                    results.push(("avx2", pulp::Simd::vectorize(simd, op())));
                }
                for (name, out) in results {
                    let dp = out.len() / l;
                    for i in 0..l {
                        for c in 0..d {
                            let (got, want) = (out[i * dp + c] as f64, expected[i * d + c]);
                            assert!(
                                (got - want).abs() < 1e-5,
                                "{name}: l {l}, d {d}, head {head}, row {i}, col {c}: {got} vs {want}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn softmax_rows_sum_to_one() {
        let src: Vec<f32> = (0..37).map(|i| (i as f32 * 0.7).sin() * 30.0).collect();
        let mut out = src.clone();
        softmax_in_place(&mut out);
        let m = src.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let z: f64 = src.iter().map(|&s| ((s - m) as f64).exp()).sum();
        for (o, &s) in out.iter().zip(&src) {
            let exact = ((s - m) as f64).exp() / z;
            assert!((*o as f64 - exact).abs() < 1e-6);
        }
    }
}
