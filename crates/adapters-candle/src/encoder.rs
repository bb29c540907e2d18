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
//! [Qᵀ;Kᵀ] = [W_q/√d; W_k] · Xᵀ                               one 2H × T matmul (the 1/√d scale
//!                                                             folded in at load)
//! V       = X · W_vᵀ                                          T × H
//! P_s,h   = softmax_rows((Q_s,h + b_q) · K_s,hᵀ)              per sequence s and head h: l × l
//!                                                             (b_k cancels in the softmax)
//! C_s,h   = P_s,h · V_s,h + b_v                               l × d, heads side by side → T × H,
//!                                                             kept transposed (Cᵀ, H × T)
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
    /// `bert`, `roberta`, `xlm-roberta`, …: the RoBERTa family counts positions from
    /// `pad_token_id + 1`.
    #[serde(default = "default_model_type")]
    pub(crate) model_type: String,
    #[serde(default)]
    pub(crate) pad_token_id: usize,
}

impl BertConfig {
    /// The index of the first position: 0 for BERT, `pad_token_id + 1` for the RoBERTa family
    /// (whose position table reserves the rows up to the padding index).
    pub(crate) fn position_offset(&self) -> usize {
        if self.is_roberta() {
            self.pad_token_id + 1
        } else {
            0
        }
    }

    /// RoBERTa and XLM-RoBERTa: BERT's encoder with offset positions and one token type.
    pub(crate) fn is_roberta(&self) -> bool {
        matches!(self.model_type.as_str(), "roberta" | "xlm-roberta")
    }

    /// The longest sequence the position table holds.
    pub(crate) fn max_tokens(&self) -> usize {
        self.max_position_embeddings
            .saturating_sub(self.position_offset())
    }
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
fn default_model_type() -> String {
    "bert".into()
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

/// The query and key projections of a layer, for `[Qᵀ; Kᵀ] = W · Xᵀ` (`2H × T`).
#[derive(Debug)]
struct QueryKey {
    /// `[W_q/√d; W_k]`, `2H × H` as stored (out × in).
    w: Tensor,
    /// `b_q/√d`. The key bias is not needed: it adds `(q_i + b_q) · b_k` to every score of query
    /// `i`, a constant that softmax cancels.
    q_bias: Vec<f32>,
}

impl QueryKey {
    fn load(vb: &VarBuilder<'_>, hidden: usize, scale: f64) -> Result<Self> {
        let get = |name: &str| vb.get((hidden, hidden), &format!("attention.self.{name}.weight"));
        let w = Tensor::cat(&[(get("query")? * scale)?, get("key")?], 0)?;
        let q_bias = (vb.get(hidden, "attention.self.query.bias")? * scale)?.to_vec1::<f32>()?;
        // Read (and so checked) although unused, like every other weight of the file.
        vb.get(hidden, "attention.self.key.bias")?;
        Ok(Self { w, q_bias })
    }
}

#[derive(Debug)]
struct Layer {
    query_key: QueryKey,
    value: Linear,
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
    /// Position of the first token (see [`BertConfig::position_offset`]).
    position_offset: usize,
    type_vocab: usize,
}

/// Rows of a row-major matrix handed to one parallel task.
const ROWS_PER_TASK: usize = 16;

impl BertEncoder {
    /// Loads the weights from `vb` (names with or without a `bert.`, `roberta.` prefix).
    pub(crate) fn load(vb: VarBuilder<'_>, config: &BertConfig) -> Result<Self> {
        let vb = match ["bert", "roberta"]
            .into_iter()
            .find(|p| vb.contains_tensor(&format!("{p}.embeddings.word_embeddings.weight")))
        {
            Some(prefix) => vb.pp(prefix),
            None => vb,
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
                    query_key: QueryKey::load(&vb, h, 1.0 / (head_dim as f64).sqrt())?,
                    value: Linear::load(&vb, "attention.self.value", h, h)?,
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
            position_offset: config.position_offset(),
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
        // The attention context, transposed (`H × T`), written by every layer in turn.
        let ctx_t = Tensor::zeros((h, rows), candle_core::DType::F32, &Device::Cpu)?;
        let act = self.activation;
        for layer in &self.layers {
            // Attention block: Q and K come out transposed, V as rows; their biases are folded
            // into the attention kernel.
            let qk_t = layer.query_key.w.matmul(&x.t()?)?;
            let v = x.matmul(&layer.value.wt)?;
            update_from2(&ctx_t, &qk_t, &v, |ctx_t, qk_t, v| {
                self.attention(qk_t, v, layer, &lens, ctx_t)
            })?;
            let x_attn = ctx_t.t()?.matmul(&layer.attn_out.wt)?;
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
            if seq.len() + self.position_offset > self.max_positions {
                candle_core::bail!(
                    "sequence of {} tokens exceeds the model's {} positions",
                    seq.len(),
                    self.max_positions - self.position_offset
                );
            }
            for (p, (&id, &t)) in seq.iter().zip(ty.iter()).enumerate() {
                // One-type models (RoBERTa family) get type 0 for both halves of a pair, as
                // their tokenizers' pair encodings may mark the second half 1.
                let t = if self.type_vocab == 1 { 0 } else { t };
                if id as usize * h >= self.word.len() || t as usize >= self.type_vocab {
                    candle_core::bail!("token id {id} or type {t} outside the vocabulary");
                }
                tokens.push((id as usize, p + self.position_offset, t as usize));
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

    /// Multi-head self-attention per sequence: from `[Qᵀ; Kᵀ]` (`2H × T`, biases not added) and
    /// `V` (`T × H`, bias not added), writes the transposed context `Cᵀ` (`H × T`).
    ///
    /// One task per (sequence, head), in parallel, each running [`HeadAttention`] into its own
    /// `d` row segments of `Cᵀ`.
    fn attention(&self, qk_t: &[f32], v: &[f32], layer: &Layer, lens: &[usize], ctx_t: &mut [f32]) {
        let h = self.hidden;
        let heads = self.heads;
        let d = h / heads;
        let tokens = ctx_t.len() / h;
        let mut starts = Vec::with_capacity(lens.len());
        let mut offset = 0;
        for &l in lens {
            starts.push(offset);
            offset += l;
        }
        // Row `r` of Cᵀ belongs to head `r / d`; its segment `start..start + l` to sequence `s`.
        let mut outs: Vec<Vec<&mut [f32]>> = (0..lens.len() * heads)
            .map(|_| Vec::with_capacity(d))
            .collect();
        for (r, mut row) in ctx_t.chunks_exact_mut(tokens).enumerate() {
            for (s, &l) in lens.iter().enumerate() {
                let (segment, rest) = row.split_at_mut(l);
                outs[s * heads + r / d].push(segment);
                row = rest;
            }
        }
        outs.into_par_iter().enumerate().for_each(|(task, out)| {
            let (s, head) = (task / heads, task % heads);
            if lens[s] > 0 {
                pulp::Arch::new().dispatch(HeadAttention {
                    qk_t,
                    v,
                    q_bias: &layer.query_key.q_bias,
                    v_bias: &layer.value.bias,
                    hidden: h,
                    tokens,
                    start: starts[s],
                    len: lens[s],
                    offset: head * d,
                    out,
                });
            }
        });
    }
}

/// Vectors of queries per attention tile.
const QUERY_VECTORS: usize = 2;

/// Attention of one head over one sequence, queries along the SIMD lanes (`S::f32s` vectors of
/// `n` lanes), for tiles of `w = 2n` queries:
///
/// 1. scores, key-major: `Sᵀ[j] = kb[j] + Σ_c Kᵀ[c][j] · Qᵀ[c][tile]`, several keys at a time,
///    where `kb[j] = b_q · k_j` is the query bias's share (the key bias's share is the same for
///    every key, so softmax cancels it);
/// 2. softmax down each column (one query per lane), so max and sum need no reduction across
///    lanes; the `1/Σ` is applied to the context instead of the probabilities;
/// 3. context, transposed: `Cᵀ[c][tile] = b_v[c] + (Σ_j V[j][c] · Pᵀ[j]) / Σ`, several
///    dimensions at a time (`Σ_j p_ij = 1`, so the value bias is added once).
///
/// Q, K and V are read where the matmuls wrote them: no gather, no transpose.
struct HeadAttention<'a> {
    /// `[Qᵀ; Kᵀ]`, `2H × T`.
    qk_t: &'a [f32],
    /// `V`, `T × H`.
    v: &'a [f32],
    q_bias: &'a [f32],
    v_bias: &'a [f32],
    hidden: usize,
    /// `T`, the row length of `qk_t`.
    tokens: usize,
    /// The sequence's first token and its length `l`.
    start: usize,
    len: usize,
    /// The head's first dimension.
    offset: usize,
    /// The head's `d` rows of `Cᵀ`, restricted to the sequence's `l` columns.
    out: Vec<&'a mut [f32]>,
}

impl pulp::WithSimd for HeadAttention<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        const QV: usize = QUERY_VECTORS;
        let Self {
            qk_t,
            v,
            q_bias,
            v_bias,
            hidden,
            tokens,
            start,
            len: l,
            offset,
            mut out,
        } = self;
        let d = out.len();
        let w = QV * S::F32_LANES;
        let row = |r: usize| &qk_t[r * tokens + start..r * tokens + start + l];
        let k_rows: Vec<&[f32]> = (0..d).map(|c| row(hidden + offset + c)).collect();
        let v_rows = v[start * hidden..(start + l) * hidden].chunks_exact(hidden);
        let q_bias = &q_bias[offset..offset + d];
        let v_bias = &v_bias[offset..offset + d];
        let mut kb = vec![0f32; l];
        for (k, &b) in k_rows.iter().zip(q_bias) {
            for (o, &x) in kb.iter_mut().zip(*k) {
                *o += b * x;
            }
        }
        let mut q_tile = vec![0f32; d * w];
        let mut scores = vec![0f32; l * w];
        let mut stage = vec![0f32; w];
        for i0 in (0..l).step_by(w) {
            let wi = w.min(l - i0);
            for (c, dst) in q_tile.chunks_exact_mut(w).enumerate() {
                let src = &row(offset + c)[i0..i0 + wi];
                if wi == w {
                    // Vector by vector: a memmove call per row would cost more than the copy.
                    let dst: &mut [S::f32s; QV] =
                        S::as_mut_simd_f32s(dst).0.try_into().expect("QV");
                    *dst = S::as_simd_f32s(src).0.try_into().expect("QV");
                } else {
                    dst[..wi].copy_from_slice(src);
                    dst[wi..].fill(0.0);
                }
            }
            let q = S::as_simd_f32s(&q_tile).0;
            // 1. Scores.
            {
                let st = S::as_mut_simd_f32s(&mut scores).0;
                let mut j0 = 0;
                if S::REGISTER_COUNT >= 32 {
                    while j0 + 12 <= l {
                        score_tile::<S, 12>(simd, &k_rows, &kb, q, st, j0);
                        j0 += 12;
                    }
                }
                while j0 + 4 <= l {
                    score_tile::<S, 4>(simd, &k_rows, &kb, q, st, j0);
                    j0 += 4;
                }
                while j0 < l {
                    score_tile::<S, 1>(simd, &k_rows, &kb, q, st, j0);
                    j0 += 1;
                }
            }
            // 2. Softmax down the columns.
            let inv_z = {
                let st = S::as_mut_simd_f32s(&mut scores).0;
                let mut m = [simd.splat_f32s(f32::NEG_INFINITY); QV];
                for s in st.chunks_exact(QV) {
                    for (m, &x) in m.iter_mut().zip(s) {
                        *m = simd.max_f32s(*m, x);
                    }
                }
                let mut z = [simd.splat_f32s(0.0); QV];
                for s in st.chunks_exact_mut(QV) {
                    for ((x, &m), z) in s.iter_mut().zip(&m).zip(&mut z) {
                        *x = exp_simd(simd, simd.sub_f32s(*x, m));
                        *z = simd.add_f32s(*z, *x);
                    }
                }
                z.map(|z| simd.div_f32s(simd.splat_f32s(1.0), z))
            };
            // 3. Context.
            let p = S::as_simd_f32s(&scores).0;
            let mut c0 = 0;
            let mut ctx = Context {
                v_rows: v_rows.clone(),
                offset,
                p,
                inv_z,
                v_bias,
                stage: &mut stage,
                out: &mut out,
                i0,
                wi,
            };
            if S::REGISTER_COUNT >= 32 {
                while c0 + 8 <= d {
                    ctx.tile::<8>(simd, c0);
                    c0 += 8;
                }
            }
            while c0 + 4 <= d {
                ctx.tile::<4>(simd, c0);
                c0 += 4;
            }
            while c0 < d {
                ctx.tile::<1>(simd, c0);
                c0 += 1;
            }
        }
    }
}

/// Scores of keys `j0 .. j0 + K` against a tile of queries: `QV` vectors per key.
#[inline(always)]
fn score_tile<S: pulp::Simd, const K: usize>(
    simd: S,
    k_rows: &[&[f32]],
    kb: &[f32],
    q: &[S::f32s],
    st: &mut [S::f32s],
    j0: usize,
) {
    const QV: usize = QUERY_VECTORS;
    let mut acc: [[S::f32s; QV]; K] = std::array::from_fn(|r| [simd.splat_f32s(kb[j0 + r]); QV]);
    for (k, q) in k_rows.iter().zip(q.chunks_exact(QV)) {
        let k: &[f32; K] = k[j0..j0 + K].try_into().expect("K keys");
        for (a, &kr) in acc.iter_mut().zip(k) {
            let kr = simd.splat_f32s(kr);
            for (a, &q) in a.iter_mut().zip(q) {
                *a = simd.mul_add_e_f32s(kr, q, *a);
            }
        }
    }
    for (r, a) in acc.iter().enumerate() {
        st[(j0 + r) * QV..(j0 + r + 1) * QV].copy_from_slice(a);
    }
}

/// Step 3 of [`HeadAttention`] for one tile of queries.
struct Context<'a, 'b, S: pulp::Simd, I> {
    v_rows: I,
    /// The head's first dimension.
    offset: usize,
    /// `Pᵀ`, unnormalised: `QV` vectors per key.
    p: &'a [S::f32s],
    inv_z: [S::f32s; QUERY_VECTORS],
    /// The head's value bias.
    v_bias: &'a [f32],
    stage: &'a mut [f32],
    out: &'a mut [&'b mut [f32]],
    /// The tile's first query and its number of queries.
    i0: usize,
    wi: usize,
}

impl<'a, S: pulp::Simd, I: Iterator<Item = &'a [f32]> + Clone> Context<'a, '_, S, I> {
    /// `Cᵀ[c][tile] = b_v[c] + (Σ_j V[j][c] · Pᵀ[j]) / Σ` for the `D` dimensions `c0 .. c0 + D`.
    #[inline(always)]
    fn tile<const D: usize>(&mut self, simd: S, c0: usize) {
        const QV: usize = QUERY_VECTORS;
        let mut acc = [[simd.splat_f32s(0.0); QV]; D];
        let from = self.offset + c0;
        for (v, p) in self.v_rows.clone().zip(self.p.chunks_exact(QV)) {
            let v: &[f32; D] = v[from..from + D].try_into().expect("D dimensions");
            for (a, &vc) in acc.iter_mut().zip(v) {
                let vc = simd.splat_f32s(vc);
                for (a, &p) in a.iter_mut().zip(p) {
                    *a = simd.mul_add_e_f32s(vc, p, *a);
                }
            }
        }
        let full = self.wi == QV * S::F32_LANES;
        for (r, a) in acc.iter().enumerate() {
            let b = simd.splat_f32s(self.v_bias[c0 + r]);
            let out = &mut self.out[c0 + r][self.i0..self.i0 + self.wi];
            // A full tile goes straight to the output; a partial one through `stage`.
            let dst = S::as_mut_simd_f32s(if full { out } else { self.stage }).0;
            for k in 0..QV {
                dst[k] = simd.mul_add_e_f32s(a[k], self.inv_z[k], b);
            }
            if !full {
                self.out[c0 + r][self.i0..self.i0 + self.wi]
                    .copy_from_slice(&self.stage[..self.wi]);
            }
        }
    }
}

/// `eˣ` on a vector: [`exp`]'s algorithm with the `2ⁿ` scale built by an integer multiply
/// (`(n + 127) · 2²³`, pulp has no vector shift).
#[inline(always)]
fn exp_simd<S: pulp::Simd>(simd: S, x: S::f32s) -> S::f32s {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const ROUND: f32 = 12_582_912.0;
    let f = |v: f32| simd.splat_f32s(v);
    let x = simd.min_f32s(simd.max_f32s(x, f(-87.0)), f(88.0));
    let y = simd.mul_add_e_f32s(x, f(LOG2_E), f(ROUND));
    let n = simd.sub_f32s(y, f(ROUND));
    let r = simd.mul_add_e_f32s(n, f(-LN2_HI), x);
    let r = simd.mul_add_e_f32s(n, f(-LN2_LO), r);
    let mut p = f(1.987_569_1e-4);
    for c in [
        1.398_199_9e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        1.666_666_5e-1,
        0.5,
    ] {
        p = simd.mul_add_e_f32s(p, r, f(c));
    }
    let er = simd.mul_add_e_f32s(simd.mul_f32s(p, r), r, simd.add_f32s(r, f(1.0)));
    let n_bits = simd.sub_u32s(pulp::cast(y), simd.splat_u32s(ROUND.to_bits()));
    let scale = simd.mul_u32s(
        simd.add_u32s(n_bits, simd.splat_u32s(127)),
        simd.splat_u32s(1 << 23),
    );
    simd.mul_f32s(er, pulp::cast(scale))
}

/// Calls `f` on the contiguous f32 data of `t`, in place, and that of `a` and `b`.
fn update_from2(
    t: &Tensor,
    a: &Tensor,
    b: &Tensor,
    f: impl Fn(&mut [f32], &[f32], &[f32]),
) -> Result<()> {
    struct Op<F>(F);
    impl<F: Fn(&mut [f32], &[f32], &[f32])> candle_core::InplaceOp3 for Op<F> {
        fn name(&self) -> &'static str {
            "zhiku-update-from2"
        }
        fn cpu_fwd(
            &self,
            dst: &mut candle_core::CpuStorage,
            dst_layout: &Layout,
            a: &candle_core::CpuStorage,
            a_layout: &Layout,
            b: &candle_core::CpuStorage,
            b_layout: &Layout,
        ) -> Result<()> {
            (self.0)(
                cpu_slice_mut(dst, dst_layout)?,
                cpu_slice(a, a_layout)?,
                cpu_slice(b, b_layout)?,
            );
            Ok(())
        }
    }
    t.inplace_op3(a, b, &Op(f))
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
            (self.0)(cpu_slice_mut(dst, dst_layout)?, cpu_slice(src, src_layout)?);
            Ok(())
        }
    }
    t.inplace_op2(src, &Op(f))
}

fn cpu_slice<'a>(storage: &'a candle_core::CpuStorage, layout: &Layout) -> Result<&'a [f32]> {
    let candle_core::CpuStorage::F32(data) = storage else {
        candle_core::bail!("expected f32 data");
    };
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

    /// Deterministic values in [-scale, scale).
    fn values(n: usize, seed: usize, scale: f32) -> Vec<f32> {
        (0..n)
            .map(|i| (((i + seed) * 7919 % 1000) as f32 / 1000.0 - 0.5) * 2.0 * scale)
            .collect()
    }

    #[test]
    fn attention_kernel_matches_the_definition_on_every_instruction_set() {
        // Two packed sequences; lengths and head widths that fill no tile exactly, and some that do.
        for (l1, l2, d) in [
            (1, 5, 32),
            (7, 37, 32),
            (64, 13, 32),
            (50, 3, 20),
            (33, 70, 64),
        ] {
            let heads = 3;
            let hidden = heads * d;
            let tokens = l1 + l2;
            let qk_t = values(2 * hidden * tokens, 1, 1.0);
            let v = values(tokens * hidden, 2, 1.0);
            let (q_bias, k_bias, v_bias) = (
                values(hidden, 3, 0.5),
                values(hidden, 4, 0.5),
                values(hidden, 5, 0.5),
            );
            for (start, l) in [(0, l1), (l1, l2)] {
                for head in 0..heads {
                    let o = head * d;
                    // softmax_j((q_i + b_q) · (k_j + b_k)) (v_j + b_v), in f64.
                    let q = |i: usize, c: usize| {
                        (qk_t[(o + c) * tokens + start + i] + q_bias[o + c]) as f64
                    };
                    let k = |j: usize, c: usize| {
                        (qk_t[(hidden + o + c) * tokens + start + j] + k_bias[o + c]) as f64
                    };
                    let val = |j: usize, c: usize| {
                        (v[(start + j) * hidden + o + c] + v_bias[o + c]) as f64
                    };
                    let mut expected = vec![0f64; l * d];
                    for i in 0..l {
                        let s: Vec<f64> = (0..l)
                            .map(|j| (0..d).map(|c| q(i, c) * k(j, c)).sum())
                            .collect();
                        let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                        let z: f64 = s.iter().map(|s| (s - m).exp()).sum();
                        for (j, s) in s.iter().enumerate() {
                            for c in 0..d {
                                expected[i * d + c] += (s - m).exp() / z * val(j, c);
                            }
                        }
                    }
                    let run = |variant: &str| {
                        let mut ctx_t = vec![f32::NAN; d * l];
                        let op = HeadAttention {
                            qk_t: &qk_t,
                            v: &v,
                            q_bias: &q_bias,
                            v_bias: &v_bias,
                            hidden,
                            tokens,
                            start,
                            len: l,
                            offset: o,
                            out: ctx_t.chunks_exact_mut(l).collect(),
                        };
                        match variant {
                            "scalar" => pulp::Simd::vectorize(pulp::Scalar::new(), op),
                            #[cfg(target_arch = "x86_64")]
                            "avx2" => match pulp::x86::V3::try_new() {
                                Some(simd) => pulp::Simd::vectorize(simd, op),
                                None => return None,
                            },
                            _ => pulp::Arch::new().dispatch(op),
                        }
                        Some(ctx_t)
                    };
                    for variant in ["dispatch", "scalar", "avx2"] {
                        let Some(ctx_t) = run(variant) else { continue };
                        for i in 0..l {
                            for c in 0..d {
                                let (got, want) = (ctx_t[c * l + i] as f64, expected[i * d + c]);
                                assert!(
                                    (got - want).abs() < 1e-5,
                                    "{variant}: l {l}, d {d}, head {head}, row {i}, col {c}: {got} vs {want}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
