//! ONNX Runtime through `ort`, its shared library loaded at run time.
//!
//! The runtime's environment is process-wide: the library is loaded and the environment built
//! once, on the first model loaded, and kept in a static for the life of the process (ort
//! holds only a weak reference to it, and sessions outlive any one engine). A second engine
//! naming another library file still gets the first one loaded.
//!
//! Every PP-OCR model has one float input (NCHW) and one float output, so a [`Model`] is just
//! "this tensor in, that tensor out".

use std::path::Path;
use std::sync::OnceLock;

use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::TensorRef;

/// Why the runtime or a model could not be loaded, or a run failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RuntimeError {
    /// The library or a model cannot be loaded: the engine cannot run here.
    Unavailable(String),
    /// A run failed.
    Run(String),
}

static ENVIRONMENT: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();

/// The process's ONNX Runtime environment, loading `library` the first time.
fn environment(library: &Path) -> Result<&'static ort::environment::Environment, RuntimeError> {
    let env = ENVIRONMENT.get_or_init(|| {
        // ort panics (rather than failing) when the file is a shared library but not ONNX
        // Runtime, or one whose C API is too old: caught, and told like any other failure.
        let built = std::panic::catch_unwind(|| {
            ort::init_from(library)
                .map_err(|e| e.to_string())?
                .with_name("zhiku-ppocr")
                // ort asks the runtime to send usage telemetry unless told not to; the PyPI
                // build of ONNX Runtime carries Microsoft's 1DS telemetry client.
                .with_telemetry(false)
                .build()
                .map_err(|e| e.to_string())
        });
        match built {
            Ok(result) => result,
            Err(_) => Err("it is not an ONNX Runtime library ort can use".to_string()),
        }
        .map_err(|e| format!("cannot load ONNX Runtime from {}: {e}", library.display()))
    });
    env.as_ref()
        .map_err(|e| RuntimeError::Unavailable(e.clone()))
}

/// One loaded model.
pub(crate) struct Model {
    session: Session,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").finish_non_exhaustive()
    }
}

impl Model {
    /// The model of the file `path`, run by `threads` threads (intra-op; one inter-op).
    pub(crate) fn load(library: &Path, path: &Path, threads: usize) -> Result<Self, RuntimeError> {
        let env = environment(library)?;
        let unavailable = |e: &dyn std::fmt::Display| {
            RuntimeError::Unavailable(format!("cannot load {}: {e}", path.display()))
        };
        let session = Session::builder(env)
            .map_err(|e| unavailable(&e))?
            // `All` (ORT_ENABLE_ALL), what Python's onnxruntime does by default. Not `Level3`:
            // in ort rc.15 that is ORT_ENABLE_LAYOUT, which older runtimes refuse.
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(|e| unavailable(&e))?
            .with_intra_threads(threads.max(1))
            .map_err(|e| unavailable(&e))?
            .with_inter_threads(1)
            .map_err(|e| unavailable(&e))?
            // Detection inputs change shape every page: a memory pattern planned for one
            // shape is of no use for the next.
            .with_memory_pattern(false)
            .map_err(|e| unavailable(&e))?
            .commit_from_file(path)
            .map_err(|e| unavailable(&e))?;
        Ok(Self { session })
    }

    /// Runs the model on the tensor of `shape` holding `data` (row-major); its output's shape
    /// and data.
    pub(crate) fn run(
        &mut self,
        shape: &[usize],
        data: &[f32],
    ) -> Result<(Vec<usize>, Vec<f32>), RuntimeError> {
        let failed = |e: ort::Error| RuntimeError::Run(format!("onnxruntime: {e}"));
        let shape: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let value = TensorRef::from_array_view((shape, data)).map_err(failed)?;
        let outputs = self.session.run(ort::inputs![value]).map_err(failed)?;
        let (shape, data) = outputs[0].try_extract_tensor::<f32>().map_err(failed)?;
        Ok((
            shape.iter().map(|&d| d.max(0) as usize).collect(),
            data.to_vec(),
        ))
    }
}
