//! `POST /tools/{server}/{tool}` (JSON arguments) and `/status/page` before the demo server,
//! compiled in: `cargo run --example service --features actix-web` (`service_guarded`: password).
#[path = "../src/bin/mcp-demo-server/main.rs"]
mod demo_server;

use actix::Addr;
use actix_web::{error::ErrorServiceUnavailable as Gone, post, web, App, HttpServer};
use mcp_supervisor::{model::CallToolResult, web::status_scope, CallTool, ServerConfig};
use mcp_supervisor::{Shutdown, Supervisor};

#[post("/tools/{server}/{tool}")]
async fn call_tool(
    sup: web::Data<Addr<Supervisor>>,
    path: web::Path<(String, String)>,
    args: web::Json<serde_json::Value>,
) -> actix_web::Result<web::Json<CallToolResult>> {
    let call = CallTool::new(&path.0, &path.1, args.into_inner());
    // Outer error: the supervisor is gone (503); inner: the call's `Error`, a `ResponseError`.
    Ok(web::Json(sup.send(call).await.map_err(Gone)??))
}

#[actix_web::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("--demo-server") {
        demo_server::main(); // this binary is also the server it supervises
        return Ok(());
    }
    let exe = std::env::current_exe()?.display().to_string();
    let demo = ServerConfig::stdio("demo", exe).args(["--demo-server"]);
    let sup = Supervisor::builder().server(demo).start()?;
    let data = web::Data::new(sup.clone());
    HttpServer::new(move || {
        let routes = (call_tool, status_scope(data.get_ref().clone()));
        App::new().app_data(data.clone()).service(routes)
    })
    .bind(("127.0.0.1", 8080))?
    .run()
    .await?;
    Ok(sup.send(Shutdown).await?)
}
