//! A chain of generators: when one cannot answer for a reason another may not share (it is
//! unreachable, timed out, overloaded), the next one answers, and the answer says so.

use std::sync::Arc;

use zhiku_domain::ports::{GenerateError, Generated, GenerationRequest, Generator};

/// Tries its generators in order and answers with the first that succeeds.
///
/// Falls through only on errors whose [`is_temporary`](GenerateError::is_temporary) says
/// another generator may help: the server cannot be reached or timed out, or answered
/// 408/429/5xx. An error about the request or the setup itself — the request refused as
/// invalid (400/413/422), a permanent status such as 401, 403 or 404 (a wrong key or model
/// name), a reply that is not a chat completion — is returned as it is: a degraded answer
/// would hide a mistake someone has to fix, and the next server would likely refuse the same
/// request.
///
/// Every generator fallen back from leaves a notice (who failed, why, who answered next) in
/// the [`Generated`] result, and [`Generated::generator`] names the generator that answered.
/// When every generator fails, the last error is returned.
pub struct FallbackGenerator {
    chain: Vec<Arc<dyn Generator>>,
}

impl std::fmt::Debug for FallbackGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FallbackGenerator")
            .field("chain", &self.identities())
            .finish()
    }
}

impl FallbackGenerator {
    /// A chain over `chain`, first to last; `None` when it is empty.
    pub fn new(chain: Vec<Arc<dyn Generator>>) -> Option<Self> {
        (!chain.is_empty()).then_some(Self { chain })
    }

    fn identities(&self) -> Vec<String> {
        self.chain.iter().map(|g| g.identity()).collect()
    }

    /// Runs `call` along the chain; the notices say who was fallen back from.
    fn along<T>(
        &self,
        mut call: impl FnMut(&dyn Generator) -> Result<T, GenerateError>,
    ) -> Result<(T, String, Vec<String>), GenerateError> {
        let mut notices = Vec::new();
        let mut last = None;
        for (i, generator) in self.chain.iter().enumerate() {
            match call(generator.as_ref()) {
                Ok(out) => return Ok((out, generator.identity(), notices)),
                Err(e) if e.is_temporary() && i + 1 < self.chain.len() => {
                    notices.push(format!(
                        "generator {} failed ({e}); falling back to {}",
                        generator.identity(),
                        self.chain[i + 1].identity()
                    ));
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| GenerateError::InvalidInput("empty generator chain".into())))
    }
}

impl Generator for FallbackGenerator {
    fn identity(&self) -> String {
        format!("fallback({})", self.identities().join(" -> "))
    }

    fn generate(&self, request: &GenerationRequest) -> Result<String, GenerateError> {
        Ok(self.generate_attributed(request)?.text)
    }

    /// Streams from the first generator that does not fail; a generator that fails after some
    /// deltas has already passed them on.
    fn generate_streaming(
        &self,
        request: &GenerationRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<String, GenerateError> {
        self.along(|g| g.generate_streaming(request, on_delta))
            .map(|(text, _, _)| text)
    }

    fn generate_attributed(&self, request: &GenerationRequest) -> Result<Generated, GenerateError> {
        // A delegate that is itself a chain (or a wrapper) names who answered inside it.
        let (inner, _, mut notices) = self.along(|g| g.generate_attributed(request))?;
        notices.extend(inner.notices);
        Ok(Generated {
            text: inner.text,
            generator: inner.generator,
            notices,
            usage: inner.usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use zhiku_domain::rules::context::build_request;

    use super::*;

    /// A generator with a fixed outcome, counting its calls.
    struct Fixed {
        name: &'static str,
        outcome: fn() -> Result<String, GenerateError>,
        calls: AtomicUsize,
    }

    impl Fixed {
        fn new(name: &'static str, outcome: fn() -> Result<String, GenerateError>) -> Arc<Self> {
            Arc::new(Self {
                name,
                outcome,
                calls: AtomicUsize::new(0),
            })
        }
    }

    impl Generator for Fixed {
        fn identity(&self) -> String {
            self.name.to_string()
        }

        fn generate(&self, _: &GenerationRequest) -> Result<String, GenerateError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            (self.outcome)()
        }
    }

    fn down() -> Result<String, GenerateError> {
        Err(GenerateError::Unavailable {
            adapter: "test",
            message: "connection refused".into(),
        })
    }

    fn refused() -> Result<String, GenerateError> {
        Err(GenerateError::InvalidInput("prompt too long".into()))
    }

    fn fine() -> Result<String, GenerateError> {
        Ok("答案[1]。".into())
    }

    #[test]
    fn an_unavailable_generator_falls_through_with_a_notice() {
        let (a, b, c) = (
            Fixed::new("a", down),
            Fixed::new("b", down),
            Fixed::new("c", fine),
        );
        let chain = FallbackGenerator::new(vec![a.clone(), b.clone(), c.clone()]).unwrap();
        let req = build_request("问题？", vec![], None, 1);
        let g = chain.generate_attributed(&req).unwrap();
        assert_eq!(g.text, "答案[1]。");
        assert_eq!(g.generator, "c");
        assert_eq!(g.notices.len(), 2, "{:?}", g.notices);
        assert!(
            g.notices[0].starts_with("generator a failed"),
            "{:?}",
            g.notices
        );
        assert!(g.notices[0].contains("connection refused"));
        assert!(g.notices[1].ends_with("falling back to c"));
        assert_eq!(chain.identity(), "fallback(a -> b -> c)");
    }

    #[test]
    fn a_refused_request_does_not_fall_through() {
        let (a, b) = (Fixed::new("a", refused), Fixed::new("b", fine));
        let chain = FallbackGenerator::new(vec![a, b.clone()]).unwrap();
        let req = build_request("问题？", vec![], None, 1);
        assert!(matches!(
            chain.generate_attributed(&req),
            Err(GenerateError::InvalidInput(_))
        ));
        assert_eq!(b.calls.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn when_every_generator_is_down_the_last_error_is_returned() {
        let chain =
            FallbackGenerator::new(vec![Fixed::new("a", down), Fixed::new("b", down)]).unwrap();
        let req = build_request("问题？", vec![], None, 1);
        assert!(chain.generate(&req).unwrap_err().is_temporary());
        assert!(FallbackGenerator::new(vec![]).is_none());
    }
}
