//! An actix-web service in front of an MCP server: `POST /tools/{server}/{tool}` calls a tool
//! (the JSON body is its arguments), and `/status`, `/status/events` and `/status/page` show
//! the servers to operators. The server is the in-tree demo server, compiled in as in the
//! quickstart: started with `--demo-server`, this binary is the server.
//!
//! `cargo run --example service --features actix-web`, then
//! `curl -d '{"a": 2, "b": 3}' -H 'content-type: application/json' localhost:8080/tools/demo/add`
//! and open <http://localhost:8080/status/page>. `PORT` sets the port (0: any free one).
#[path = "../src/bin/mcp-demo-server/main.rs"]
mod demo_server;

use std::time::Duration;

use actix::Addr;
use actix_web::{error::ErrorServiceUnavailable, post, web, App, HttpServer};
use mcp_supervisor::model::CallToolResult;
use mcp_supervisor::{web::status_scope, CallTool, ServerConfig, Shutdown, Supervisor};

#[post("/tools/{server}/{tool}")]
async fn call_tool(
    supervisor: web::Data<Addr<Supervisor>>,
    path: web::Path<(String, String)>,
    arguments: web::Json<serde_json::Value>,
) -> actix_web::Result<web::Json<CallToolResult>> {
    let (server, tool) = path.into_inner();
    let call = CallTool::new(server, tool, arguments.into_inner()).timeout(Duration::from_secs(30));
    // Outer error: the supervisor is gone (503); inner: the call's `Error`, a `ResponseError`.
    Ok(web::Json(
        supervisor
            .send(call)
            .await
            .map_err(ErrorServiceUnavailable)??,
    ))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("--demo-server") {
        demo_server::main();
        return Ok(());
    }
    actix_web::rt::System::new().block_on(async {
        let exe = std::env::current_exe()?
            .to_str()
            .ok_or("exe path is not UTF-8")?
            .to_owned();
        let supervisor = Supervisor::builder()
            .server(ServerConfig::stdio("demo", exe).args(["--demo-server"]))
            .start()?;
        let port = std::env::var("PORT").map_or(Ok(8080), |p| p.parse())?;
        let (sup, data) = (supervisor.clone(), web::Data::new(supervisor.clone()));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .service(call_tool)
                .service(status_scope(sup.clone()))
        })
        .shutdown_timeout(5)
        .bind(("127.0.0.1", port))?;
        println!("listening on http://{}/status/page", server.addrs()[0]);
        server.run().await?;
        Ok(supervisor.send(Shutdown).await?)
    })
}
