//! BERT-family sentence embedders for zhiku, run by candle.
//!
//! [`CandleEmbedder`] loads a sentence-transformers style model folder (`config.json`,
//! `tokenizer.json`, `model.safetensors`, and when present `1_Pooling/config.json`,
//! `modules.json`, `sentence_bert_config.json`) from a local directory or from a model id
//! resolved through `hf-hub` (its cache, `HF_HOME` and offline mode honoured). The same loading
//! code serves both.
//!
//! - Pooling (CLS or mean) and L2 normalisation are read from the sentence-transformers files;
//!   `BAAI/bge-*` models default to CLS pooling, normalisation and their retrieval instruction
//!   for queries.
//! - Texts are tokenised with truncation at the model's maximum sequence length (reported per
//!   embedding, never silent). Batches are formed after sorting by token count and are *packed*:
//!   the tokens of all texts of a batch are the rows of one matrix, with no padding at all
//!   (attention runs per text); results are returned in input order.
//! - The forward pass is [`encoder`]'s: candle matmuls for the projections, a fused attention
//!   kernel, and fused, vectorised loops in place for everything between them.
//! - The space records model id, the hub revision or a hash of the weights file, dimensions,
//!   pooling and normalisation.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use sha2::{Digest, Sha256};
use tokenizers::{Encoding, Tokenizer, TruncationParams};
use zhiku_domain::ports::{EmbedError, Embedder};
use zhiku_domain::{Embedding, EmbeddingSpace, Normalization, Pooling};

mod cross;
mod encoder;
mod tokens;

pub use cross::{CrossEncoder, CrossEncoderOptions};
use encoder::{BertConfig, BertEncoder};
pub use tokens::TokenizerFile;

const ADAPTER: &str = "candle";

/// The default model: Chinese retrieval embeddings, 512 dimensions, CLS pooling.
pub const DEFAULT_MODEL: &str = "BAAI/bge-small-zh-v1.5";

/// The instruction bge-zh models expect in front of retrieval queries.
pub const BGE_ZH_QUERY_INSTRUCTION: &str = "为这个句子生成表示以用于检索相关文章：";

/// Why a model could not be loaded. Every variant names the file involved.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A required file is missing.
    #[error("missing model file {path}: {hint}")]
    Missing {
        /// The file.
        path: PathBuf,
        /// How to fix it.
        hint: String,
    },
    /// A file exists but cannot be parsed.
    #[error("invalid model file {path}: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The model is not of an architecture this adapter runs.
    #[error("{path} describes a {found} model; this adapter runs {wanted} only")]
    Architecture {
        /// The config file.
        path: PathBuf,
        /// The architecture found.
        found: String,
        /// What it runs.
        wanted: String,
    },
    /// The hub could not provide the model (offline, unreachable, unknown id).
    #[error("cannot fetch {model} from the model hub: {reason}")]
    Hub {
        /// The model id.
        model: String,
        /// What failed.
        reason: String,
    },
}

impl From<LoadError> for EmbedError {
    fn from(e: LoadError) -> Self {
        EmbedError::Unavailable {
            adapter: ADAPTER,
            message: e.to_string(),
        }
    }
}

/// Tokens per packed forward pass: enough rows (2,048) for long gemm calls, few enough that every
/// intermediate buffer of a 384-wide model stays below 13 MB, so larger batches cost no extra
/// memory (two passes are in flight at a time, see `embed_passes`).
const MAX_PACKED_TOKENS: usize = 2048;

/// Where the model comes from.
#[derive(Debug, Clone)]
pub enum ModelSource {
    /// A local folder.
    Dir(PathBuf),
    /// A model id on the hub, optionally pinned to a revision.
    Hub {
        /// e.g. `BAAI/bge-small-zh-v1.5`.
        id: String,
        /// Branch, tag or commit (default `main`).
        revision: Option<String>,
    },
}

impl ModelSource {
    /// A local folder when `spec` is an existing directory or reads as a path (starts with `/`,
    /// `.` or `~`, or has more than one `/` or a `\\`: no hub id does), otherwise a hub id
    /// (`owner/name` or `owner/name@revision`). A path that is not a folder fails to load as
    /// missing instead of being asked of the hub.
    pub fn parse(spec: &str) -> Self {
        let path = Path::new(spec);
        let path_like = spec.starts_with(['/', '.', '~'])
            || spec.contains('\\')
            || spec.matches('/').count() > 1;
        if path.is_dir() || path_like {
            return Self::Dir(path.to_path_buf());
        }
        match spec.split_once('@') {
            Some((id, rev)) => Self::Hub {
                id: id.to_string(),
                revision: Some(rev.to_string()),
            },
            None => Self::Hub {
                id: spec.to_string(),
                revision: None,
            },
        }
    }
}

/// Tuning of the embedder.
#[derive(Debug, Clone)]
pub struct EmbedderOptions {
    /// Texts per forward pass.
    pub batch_size: usize,
    /// Overrides the maximum sequence length from the model files.
    pub max_seq_length: Option<usize>,
    /// Overrides the query instruction (empty string for none).
    pub query_instruction: Option<String>,
}

impl Default for EmbedderOptions {
    fn default() -> Self {
        Self {
            batch_size: 32,
            max_seq_length: None,
            query_instruction: None,
        }
    }
}

/// A BERT-family sentence embedder.
pub struct CandleEmbedder {
    model: BertEncoder,
    tokenizer: Tokenizer,
    space: EmbeddingSpace,
    pooling: Pooling,
    normalize: bool,
    max_seq_length: usize,
    query_instruction: String,
    batch_size: usize,
}

impl std::fmt::Debug for CandleEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CandleEmbedder")
            .field("space", &self.space.identity())
            .field("max_seq_length", &self.max_seq_length)
            .field("batch_size", &self.batch_size)
            .finish()
    }
}

/// The files of a model folder.
struct ModelFiles {
    dir: PathBuf,
    model_id: String,
    revision: Option<String>,
}

/// The first 6 bytes of `bytes`' SHA-256, in hex: names a file's content in an identity.
fn short_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn read(path: &Path) -> Result<Vec<u8>, LoadError> {
    std::fs::read(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            LoadError::Missing {
                path: path.to_path_buf(),
                hint: "the model folder needs config.json, tokenizer.json and model.safetensors"
                    .into(),
            }
        } else {
            LoadError::Invalid {
                path: path.to_path_buf(),
                reason: e.to_string(),
            }
        }
    })
}

fn read_json(path: &Path) -> Result<Option<serde_json::Value>, LoadError> {
    if !path.exists() {
        return Ok(None);
    }
    let bytes = read(path)?;
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| LoadError::Invalid {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
}

fn resolve(source: &ModelSource) -> Result<ModelFiles, LoadError> {
    match source {
        ModelSource::Dir(dir) if !dir.is_dir() => Err(LoadError::Missing {
            path: dir.clone(),
            hint: "no such folder (a local model is a folder with config.json, tokenizer.json and model.safetensors)".into(),
        }),
        ModelSource::Dir(dir) => {
            let model_id = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "local-model".into());
            Ok(ModelFiles {
                dir: dir.clone(),
                model_id,
                revision: None,
            })
        }
        ModelSource::Hub { id, revision } => resolve_hub(id, revision.as_deref()),
    }
}

const HUB_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
const OPTIONAL_FILES: [&str; 3] = [
    "1_Pooling/config.json",
    "modules.json",
    "sentence_bert_config.json",
];

/// The hub cache first (works offline); the network only when the cache lacks the model, offline
/// mode is off and the endpoint answers within a few seconds.
fn resolve_hub(id: &str, revision: Option<&str>) -> Result<ModelFiles, LoadError> {
    let hub_error = |reason: String| LoadError::Hub {
        model: id.to_string(),
        reason,
    };
    let repo = hf_hub::Repo::with_revision(
        id.to_string(),
        hf_hub::RepoType::Model,
        revision.unwrap_or("main").to_string(),
    );
    let cache = hf_hub::Cache::from_env().repo(repo.clone());
    let cached: Option<Vec<PathBuf>> = HUB_FILES.iter().map(|f| cache.get(f)).collect();
    let config = match cached {
        Some(paths) => paths[0].clone(),
        None => {
            let offline = std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| v == "1" || v == "true");
            if offline {
                return Err(hub_error(
                    "not in the local hub cache and HF_HUB_OFFLINE is set; download it once or use a local folder".into(),
                ));
            }
            probe_endpoint().map_err(hub_error)?;
            let api = hf_hub::api::sync::ApiBuilder::from_env()
                .with_progress(false)
                .build()
                .map_err(|e| hub_error(e.to_string()))?;
            let remote = api.repo(repo);
            let config = remote
                .get(HUB_FILES[0])
                .map_err(|e| hub_error(e.to_string()))?;
            for file in &HUB_FILES[1..] {
                remote.get(file).map_err(|e| hub_error(e.to_string()))?;
            }
            for file in OPTIONAL_FILES {
                let _ = remote.get(file);
            }
            config
        }
    };
    let dir = config
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    // Hub snapshots live under .../snapshots/<commit>/: that commit is the revision.
    let commit = dir
        .file_name()
        .map(|n| n.to_string_lossy().chars().take(12).collect::<String>());
    Ok(ModelFiles {
        dir,
        model_id: id.to_string(),
        revision: commit,
    })
}

/// Fails within seconds when the hub endpoint cannot be reached, instead of hanging.
fn probe_endpoint() -> Result<(), String> {
    use std::net::{TcpStream, ToSocketAddrs};
    use std::time::Duration;
    let endpoint = std::env::var("HF_ENDPOINT").unwrap_or_else(|_| "https://huggingface.co".into());
    let host = endpoint
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_string();
    let with_port = if host.contains(':') {
        host.clone()
    } else if endpoint.starts_with("http://") {
        format!("{host}:80")
    } else {
        format!("{host}:443")
    };
    let addrs: Vec<_> = with_port
        .to_socket_addrs()
        .map_err(|e| format!("the hub {endpoint} cannot be resolved: {e}"))?
        .collect();
    for addr in addrs {
        if TcpStream::connect_timeout(&addr, Duration::from_secs(3)).is_ok() {
            return Ok(());
        }
    }
    Err(format!("the hub {endpoint} does not answer"))
}

/// A model folder opened: its `config.json` read and parsed, its weights read and hashed.
/// The embedder and the cross-encoder load through it, from a folder or the hub alike.
pub(crate) struct Checkpoint {
    files: ModelFiles,
    config_path: PathBuf,
    config_json: serde_json::Value,
    config: BertConfig,
    architectures: Vec<String>,
    weights_path: PathBuf,
    weights: Vec<u8>,
    weights_hash: String,
}

impl Checkpoint {
    pub(crate) fn open(source: &ModelSource) -> Result<Self, LoadError> {
        let files = resolve(source)?;
        let config_path = files.dir.join("config.json");
        let config_json = read_json(&config_path)?.ok_or_else(|| LoadError::Missing {
            path: config_path.clone(),
            hint: "the model folder needs config.json".into(),
        })?;
        let architectures: Vec<String> = config_json
            .get("architectures")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let config: BertConfig =
            serde_json::from_value(config_json.clone()).map_err(|e| LoadError::Invalid {
                path: config_path.clone(),
                reason: e.to_string(),
            })?;
        let weights_path = files.dir.join("model.safetensors");
        let weights = read(&weights_path)?;
        let weights_hash = short_hash(&weights);
        Ok(Self {
            files,
            config_path,
            config_json,
            config,
            architectures,
            weights_path,
            weights,
            weights_hash,
        })
    }

    /// `model_type (Arch1, Arch2)`, for errors.
    pub(crate) fn describe_architecture(&self) -> String {
        if self.architectures.is_empty() {
            self.config.model_type.clone()
        } else {
            format!(
                "{} ({})",
                self.config.model_type,
                self.architectures.join(", ")
            )
        }
    }

    pub(crate) fn architecture_error(&self, wanted: &str) -> LoadError {
        LoadError::Architecture {
            path: self.config_path.clone(),
            found: self.describe_architecture(),
            wanted: wanted.to_string(),
        }
    }

    /// The weights as a variable builder (the file's bytes move into it).
    pub(crate) fn var_builder(&mut self) -> Result<VarBuilder<'static>, LoadError> {
        let weights = std::mem::take(&mut self.weights);
        VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu).map_err(|e| {
            LoadError::Invalid {
                path: self.weights_path.clone(),
                reason: e.to_string(),
            }
        })
    }

    /// The encoder, from the weights.
    pub(crate) fn encoder(&mut self) -> Result<(BertEncoder, VarBuilder<'static>), LoadError> {
        let vb = self.var_builder()?;
        let model = BertEncoder::load(vb.clone(), &self.config).map_err(|e| self.misfit(e))?;
        Ok((model, vb))
    }

    /// Weights that do not fit `config.json`.
    pub(crate) fn misfit(&self, e: impl std::fmt::Display) -> LoadError {
        LoadError::Invalid {
            path: self.weights_path.clone(),
            reason: format!("weights do not fit config.json: {e}"),
        }
    }

    /// `tokenizer.json`, truncating at `max_length` tokens (pairs: the longer side first), never
    /// padding (batches are packed).
    pub(crate) fn tokenizer(&self, max_length: usize) -> Result<Tokenizer, LoadError> {
        let path = self.files.dir.join("tokenizer.json");
        let invalid = |reason: String| LoadError::Invalid {
            path: path.clone(),
            reason,
        };
        let mut tokenizer =
            Tokenizer::from_bytes(read(&path)?).map_err(|e| invalid(e.to_string()))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length,
                ..TruncationParams::default()
            }))
            .map_err(|e| invalid(e.to_string()))?;
        // Some tokenizer.json files ask for padding.
        tokenizer.with_padding(None);
        Ok(tokenizer)
    }

    /// The hub commit, or a hash of the weights file.
    pub(crate) fn revision(&self) -> String {
        self.files
            .revision
            .clone()
            .unwrap_or_else(|| format!("sha256-{}", self.weights_hash))
    }

    /// Labels of a sequence classifier: `num_labels`, else the size of `id2label`, else 2
    /// (the default of Hugging Face configs).
    pub(crate) fn labels(&self) -> usize {
        let json = &self.config_json;
        json.get("num_labels")
            .and_then(|v| v.as_u64())
            .map(|n| n as usize)
            .or_else(|| {
                json.get("id2label")
                    .and_then(|m| m.as_object())
                    .map(|m| m.len())
            })
            .unwrap_or(2)
    }

    /// A sequence classifier without its head.
    pub(crate) fn head_missing(&self, e: impl std::fmt::Display) -> LoadError {
        LoadError::Invalid {
            path: self.weights_path.clone(),
            reason: format!("no classification head (is this an embedding model?): {e}"),
        }
    }

    /// The model id, safe inside a space or reranker name.
    pub(crate) fn model_id(&self) -> String {
        self.files.model_id.replace([' ', '@', ':'], "_")
    }
}

impl CandleEmbedder {
    /// Loads a model from a folder or the hub.
    pub fn load(source: &ModelSource, options: &EmbedderOptions) -> Result<Self, LoadError> {
        let mut checkpoint = Checkpoint::open(source)?;
        let bert_like = checkpoint.config.model_type == "bert"
            && checkpoint
                .architectures
                .iter()
                .all(|a| a.starts_with("Bert"));
        if !bert_like {
            return Err(checkpoint.architecture_error("BERT-family encoders"));
        }
        let (model, _) = checkpoint.encoder()?;
        let config = &checkpoint.config;
        let files = &checkpoint.files;
        let dir = &files.dir;
        let config_path = checkpoint.config_path.clone();
        let is_bge = files.model_id.to_ascii_lowercase().contains("bge");
        let pooling_json = read_json(&dir.join("1_Pooling/config.json"))?;
        let pooling = match pooling_json {
            Some(p) if p.get("pooling_mode_cls_token").and_then(|v| v.as_bool()) == Some(true) => {
                Pooling::Cls
            }
            Some(p)
                if p.get("pooling_mode_mean_tokens").and_then(|v| v.as_bool()) == Some(true) =>
            {
                Pooling::Mean
            }
            Some(_) => {
                return Err(LoadError::Invalid {
                    path: dir.join("1_Pooling/config.json"),
                    reason: "only CLS and mean pooling are supported".into(),
                });
            }
            None if is_bge => Pooling::Cls,
            None => Pooling::Mean,
        };
        let modules = read_json(&dir.join("modules.json"))?;
        let normalize = match &modules {
            Some(m) => m.as_array().is_some_and(|mods| {
                mods.iter().any(|x| {
                    x.get("type")
                        .and_then(|t| t.as_str())
                        .is_some_and(|t| t.ends_with("Normalize"))
                })
            }),
            None => true,
        };
        let sbert = read_json(&dir.join("sentence_bert_config.json"))?;
        let max_seq_length = options
            .max_seq_length
            .or_else(|| {
                sbert
                    .as_ref()
                    .and_then(|s| s.get("max_seq_length"))
                    .and_then(|v| v.as_u64())
                    .map(|v| v as usize)
            })
            .unwrap_or(config.max_position_embeddings)
            .min(config.max_position_embeddings);

        let tokenizer = checkpoint.tokenizer(max_seq_length)?;

        let revision = checkpoint.revision();
        let model_id = checkpoint.model_id();
        let space = EmbeddingSpace::new(
            model_id,
            revision,
            config.hidden_size,
            pooling,
            if normalize {
                Normalization::L2
            } else {
                Normalization::None
            },
        )
        .map_err(|e| LoadError::Invalid {
            path: config_path,
            reason: e.to_string(),
        })?;
        let query_instruction = options.query_instruction.clone().unwrap_or_else(|| {
            if is_bge && files.model_id.contains("-zh") {
                BGE_ZH_QUERY_INSTRUCTION.to_string()
            } else {
                String::new()
            }
        });
        Ok(Self {
            model,
            tokenizer,
            space,
            pooling,
            normalize,
            max_seq_length,
            query_instruction,
            batch_size: options.batch_size.max(1),
        })
    }

    /// The maximum sequence length in tokens (longer texts are truncated and reported).
    pub fn max_seq_length(&self) -> usize {
        self.max_seq_length
    }

    /// Number of tokens of `text` after truncation, including special tokens.
    pub fn token_count(&self, text: &str) -> Result<usize, EmbedError> {
        let enc = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| EmbedError::InvalidInput(e.to_string()))?;
        Ok(enc.get_ids().len())
    }

    fn backend(e: impl std::error::Error + Send + Sync + 'static) -> EmbedError {
        EmbedError::Backend {
            adapter: ADAPTER,
            source: Box::new(e),
            temporary: false,
        }
    }

    fn tokenize(&self, texts: &[&str]) -> Result<Vec<Encoding>, EmbedError> {
        self.tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::InvalidInput(e.to_string()))
    }

    /// Packs one batch of tokenised texts into forward passes of at most [`MAX_PACKED_TOKENS`]
    /// tokens (one text per pass when a text alone is longer).
    fn pack<'a, 'e>(batch: &'a [&'e Encoding]) -> Vec<&'a [&'e Encoding]> {
        let mut passes = Vec::new();
        let mut from = 0;
        while from < batch.len() {
            let mut to = from + 1;
            let mut tokens = batch[from].get_ids().len();
            while to < batch.len() && tokens + batch[to].get_ids().len() <= MAX_PACKED_TOKENS {
                tokens += batch[to].get_ids().len();
                to += 1;
            }
            passes.push(&batch[from..to]);
            from = to;
        }
        passes
    }

    /// Runs forward passes, two at a time, and returns their embeddings in order.
    ///
    /// The passes run in two lanes at once (passes 0, 2, 4, … and 1, 3, 5, …), so that one pass's
    /// serial moments (allocating and zero-filling a matmul output, handing work to the threads
    /// and back) are filled with the other's parallel work. A lone pass of several texts is split
    /// into two halves for the same reason. Memory: two passes' buffers at a time.
    fn embed_passes(&self, mut passes: Vec<&[&Encoding]>) -> Result<Vec<Embedding>, EmbedError> {
        let len = |e: &&Encoding| e.get_ids().len();
        if let [pass] = passes[..]
            && pass.len() > 1
        {
            // Split where the first half reaches half the tokens (at least one text each).
            let total: usize = pass.iter().map(len).sum();
            let mut tokens = 0;
            let mut mid = 0;
            while mid + 1 < pass.len() && 2 * (tokens + len(&pass[mid])) <= total {
                tokens += len(&pass[mid]);
                mid += 1;
            }
            let (a, b) = pass.split_at(mid.max(1));
            passes = vec![a, b];
        }
        let lane = |first: usize| -> Result<Vec<Vec<Embedding>>, EmbedError> {
            passes
                .iter()
                .skip(first)
                .step_by(2)
                .map(|pass| self.embed_packed(pass))
                .collect()
        };
        let (even, odd) = match passes.len() {
            0 | 1 => (lane(0)?, Vec::new()),
            _ => {
                let (even, odd) = rayon::join(|| lane(0), || lane(1));
                (even?, odd?)
            }
        };
        let mut out = Vec::with_capacity(passes.iter().map(|p| p.len()).sum());
        let mut odd = odd.into_iter();
        for pass in even {
            out.extend(pass);
            out.extend(odd.next().into_iter().flatten());
        }
        Ok(out)
    }

    /// Embeds tokenised texts in one packed forward pass.
    fn embed_packed(&self, encodings: &[&Encoding]) -> Result<Vec<Embedding>, EmbedError> {
        let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
        let types: Vec<&[u32]> = encodings.iter().map(|e| e.get_type_ids()).collect();
        let hidden = self.model.forward(&ids, &types).map_err(Self::backend)?;
        let h = self.model.hidden_size();
        let mut rows = hidden.chunks_exact(h);
        encodings
            .iter()
            .map(|enc| {
                let len = enc.get_ids().len();
                let mut v = vec![0f32; h];
                for (i, row) in rows.by_ref().take(len).enumerate() {
                    if i == 0 || self.pooling != Pooling::Cls {
                        for (a, &x) in v.iter_mut().zip(row) {
                            *a += x;
                        }
                    }
                }
                if self.pooling != Pooling::Cls && len > 0 {
                    for a in &mut v {
                        *a /= len as f32;
                    }
                }
                if self.normalize {
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                    if norm > 0.0 {
                        for x in &mut v {
                            *x /= norm;
                        }
                    }
                }
                self.space
                    .embedding(v, !enc.get_overflowing().is_empty())
                    .map_err(|e| EmbedError::Backend {
                        adapter: ADAPTER,
                        source: Box::new(e),
                        temporary: false,
                    })
            })
            .collect()
    }

    /// Embeds texts in batches formed after sorting by token count; results in input order.
    fn embed_all(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        let encodings = self.tokenize(texts)?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].get_ids().len()));
        let sorted: Vec<&Encoding> = order.iter().map(|&i| &encodings[i]).collect();
        // Each batch packs on its own, so no pass holds more than `batch_size` texts; the passes
        // of all batches then share the two lanes.
        let passes = sorted
            .chunks(self.batch_size)
            .flat_map(Self::pack)
            .collect();
        let mut out: Vec<Option<Embedding>> = vec![None; texts.len()];
        for (&i, e) in order.iter().zip(self.embed_passes(passes)?) {
            out[i] = Some(e);
        }
        out.into_iter()
            .map(|e| e.ok_or_else(|| EmbedError::InvalidInput("missing embedding".into())))
            .collect()
    }
}

impl Embedder for CandleEmbedder {
    fn space(&self) -> &EmbeddingSpace {
        &self.space
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.embed_all(texts)
    }

    fn embed_query(&self, text: &str) -> Result<Embedding, EmbedError> {
        let query = format!("{}{text}", self.query_instruction);
        let encodings = self.tokenize(&[query.as_str()])?;
        let batch: Vec<&Encoding> = encodings.iter().collect();
        self.embed_passes(Self::pack(&batch))?
            .pop()
            .ok_or_else(|| EmbedError::InvalidInput("empty result".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_that_is_not_a_folder_is_missing_not_a_hub_id() {
        for spec in ["/no/such/model", "./model", "~/models/bge", "models/bge/v1"] {
            assert!(
                matches!(ModelSource::parse(spec), ModelSource::Dir(_)),
                "{spec}"
            );
            match resolve(&ModelSource::parse(spec)) {
                Err(LoadError::Missing { hint, .. }) => assert!(hint.contains("no such folder")),
                Err(other) => panic!("{spec}: {other}"),
                Ok(_) => panic!("{spec} resolved"),
            }
        }
        match ModelSource::parse("BAAI/bge-small-zh-v1.5@main") {
            ModelSource::Hub { id, revision } => {
                assert_eq!(id, "BAAI/bge-small-zh-v1.5");
                assert_eq!(revision.as_deref(), Some("main"));
            }
            other => panic!("{other:?}"),
        }
    }
}
