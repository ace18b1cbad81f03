//! The README's first command: logbus as the `log` backend with a console,
//! a rolling file and a JSON file, each with its own topics, level and
//! layout.
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! It leaves what it wrote in `logbus-quickstart/` under the temporary
//! directory (emptied at the start of each run) and prints the paths, so you
//! can look at the files, or follow one with `cargo run -- tail -F PATH`.

use logbus::appenders::{Console, FileAppender, JsonAppender, Layout};
use logbus::{LevelFilter, Subscription};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join("logbus-quickstart");
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
        _ => std::fs::create_dir_all(&dir)?,
    }
    let text_path = dir.join("app.log");
    let json_path = dir.join("errors.json");

    let guard = logbus::builder()
        // Info and above on the terminal, in colour when it is one.
        .appender(
            Subscription::builder("console", Console::builder().build()).level(LevelFilter::Info),
        )
        // Everything from app::db and below, debug included, in a rolling file.
        .appender(
            Subscription::builder(
                "db-file",
                FileAppender::builder(&text_path)
                    .max_bytes(10 * 1024 * 1024)
                    .keep(3)
                    .layout(Layout::parse(
                        "{ts} {level:<5} [{thread}] {target} #{seq} - {msg}{kv}",
                    )?)
                    .build()?,
            )
            .pattern("*.app.db.#"),
        )
        // Every warning and error, whatever the target, as NDJSON.
        .appender(
            Subscription::builder(
                "problems",
                JsonAppender::file(FileAppender::builder(&json_path))?,
            )
            .pattern("error.#")
            .pattern("warn.#"),
        )
        .install()?;

    log::info!(target: "app::http", "listening on {}", "127.0.0.1:8080");
    log::debug!(target: "app::db::pool", "opened {} connections", 4);
    log::warn!(target: "app::db", "slow query took {} ms", 1200);
    log::error!(target: "app::db", user = "ann", attempt = 3; "connection lost");
    log::info!(target: "app::http", "a message cannot forge\na second line");

    // Dropping the guard flushes: every queue drained, every appender flushed
    // (logging would go on; `guard.shutdown()` stops it).
    let handle = guard.handle();
    drop(guard);

    println!("--- {} ---", text_path.display());
    print!("{}", std::fs::read_to_string(&text_path)?);
    println!("--- {} ---", json_path.display());
    print!("{}", std::fs::read_to_string(&json_path)?);
    println!("--- what each appender did ---");
    for (name, stats) in &handle.stats().subscriptions {
        println!(
            "{name}: matched {}, written {}, dropped {}, lost {}",
            stats.matched, stats.written, stats.dropped, stats.lost
        );
    }
    println!("--- the files are left in {} ---", dir.display());
    println!(
        "follow one with: cargo run -- tail -F {}",
        text_path.display()
    );
    Ok(())
}
