//! Prints what zhiku extracts from one file: `cargo run -p zhiku-adapters-fs --example extract -- FILE`.
fn main() -> anyhow::Result<()> {
    let path = std::path::PathBuf::from(std::env::args().nth(1).expect("a file"));
    let rel = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("file")
        .to_string();
    let config = zhiku_adapters_fs::loader::LoaderConfig::default();
    let t = std::time::Instant::now();
    let doc = zhiku_adapters_fs::loader::load_path(&path, &rel, &config)?;
    let a = doc.attributes();
    println!(
        "title: {}\nlocale: {}\npages: {:?}\n---",
        a.title, a.locale, a.page_count
    );
    println!("{}", doc.content());
    eprintln!("extracted in {:?}", t.elapsed());
    Ok(())
}
