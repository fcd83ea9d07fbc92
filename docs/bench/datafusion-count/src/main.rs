//! Count the rows of a Parquet file or folder with DataFusion 55, every
//! read through `NowaitStore`.
//!
//! ```text
//! cargo run --release -- /path/to/parquet
//! ```

use std::sync::Arc;

use datafusion::prelude::SessionContext;
use nowait_object_store::NowaitStore;

#[tokio::main]
async fn main() -> datafusion::error::Result<()> {
    let ctx = SessionContext::new();
    // Every `file://` URL read through nowait: one call.
    ctx.register_object_store(
        &url::Url::parse("file://").unwrap(),
        Arc::new(NowaitStore::new()?),
    );
    let path = std::env::args().nth(1).expect("a Parquet file or folder");
    ctx.register_parquet("t", &path, Default::default()).await?;
    println!("{} rows", ctx.table("t").await?.count().await?);
    Ok(())
}
