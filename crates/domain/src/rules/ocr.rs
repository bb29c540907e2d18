//! Text read by OCR beside the same text from a text layer: the text layer is the better
//! witness (no misread characters), so when both are evidence the OCR twin gives way.

use crate::contracts::{Chunk, ChunkId};
use crate::rules::writeback::{NEAR_DUPLICATE, jaccard, normalise, shingles};

/// True when OCR read the chunk's text (any of its lines has an OCR confidence).
pub fn is_ocr(chunk: &Chunk) -> bool {
    chunk.boxes().iter().any(|b| b.at.is_ocr())
}

/// The positions in `chunks` (rank order) of those read by OCR whose text another chunk, not
/// read by OCR, says too (Jaccard of 5-character shingles of the normalised text at least
/// [`NEAR_DUPLICATE`]), with the chunk each twins.
pub fn ocr_twins<'a>(chunks: &[&'a Chunk]) -> Vec<(usize, &'a ChunkId)> {
    let ocr: Vec<bool> = chunks.iter().map(|c| is_ocr(c)).collect();
    let texts: Vec<Option<_>> = chunks
        .iter()
        .map(|c| {
            let n = normalise(c.content());
            (!n.is_empty()).then(|| shingles(&n))
        })
        .collect();
    let mut out = Vec::new();
    for (i, mine) in texts.iter().enumerate() {
        let Some(mine) = mine.as_ref().filter(|_| ocr[i]) else {
            continue;
        };
        let twin = (0..chunks.len()).find(|&j| {
            !ocr[j]
                && texts[j]
                    .as_ref()
                    .is_some_and(|theirs| jaccard(mine, theirs) >= NEAR_DUPLICATE)
        });
        if let Some(j) = twin {
            out.push((i, chunks[j].chunk_id()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::contracts::{DocAttributes, DocId, Document, LineBox, PageBox, Source};

    fn chunk(doc: &str, text: &str, confidence: Option<f32>) -> Chunk {
        let d =
            Document::builder(DocId::new(doc).unwrap(), Source::new(doc).unwrap(), text).build();
        let attrs: Arc<DocAttributes> = Arc::clone(d.attributes());
        let line = LineBox {
            start: 0,
            end: text.chars().count(),
            at: PageBox {
                page: 1,
                x0: 0.1,
                y0: 0.1,
                x1: 0.9,
                y1: 0.2,
                turn: 0,
                confidence,
            },
        };
        Chunk::new(d.id().clone(), 0, text.to_string(), Vec::new(), 0, attrs).with_boxes(&[line])
    }

    #[test]
    fn an_ocr_reading_gives_way_to_a_text_layer_saying_the_same() {
        let said = "合同的保修期为三年，自交付之日起计算，保修期内免费维修。";
        let misread = "合同的保修期为三年，自交付之日起计算，保修期内兔费维修。";
        let scan = chunk("scan.png", misread, Some(0.93));
        let text = chunk("contract.pdf", said, None);
        let other = chunk(
            "other.png",
            "报销须在出差结束后三十日内提交，逾期不予受理。",
            Some(0.9),
        );
        let twins = ocr_twins(&[&scan, &text, &other]);
        assert_eq!(twins, vec![(0, text.chunk_id())]);
        // Two OCR readings of the same text: neither is a text layer, both stay.
        let scan2 = chunk("scan2.png", said, Some(0.6));
        assert!(ocr_twins(&[&scan, &scan2]).is_empty());
        assert!(is_ocr(&scan) && !is_ocr(&text));
    }
}
