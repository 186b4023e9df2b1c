//! An actix-web service in front of an MCP server: `POST /tools/{server}/{tool}` calls a tool
//! (the JSON body is its arguments), and `/status`, `/status/events` and `/status/page` show
//! the servers to operators. The server is the in-tree demo server, compiled in as in the
//! quickstart: started with `--demo-server`, this binary is the server.
//!
//! `cargo run --example service_guarded --features actix-web`, then
//! `curl -d '{"a": 2, "b": 3}' -H 'content-type: application/json' localhost:8080/tools/demo/add`
//! and open <http://localhost:8080/status/page>. `PORT` sets the port (0: any free one).
//!
//! The status routes show process ids, tool lists and what the servers wrote to stderr: by
//! default only to requests from this machine, every other request gets the redacted view.
//! With `STATUS_PASSWORD` set, they ask for HTTP Basic credentials (user `ops`) and show
//! everything to whoever gives them, from anywhere.
#[path = "../src/bin/mcp-demo-server/main.rs"]
mod demo_server;

use std::time::Duration;

use actix::Addr;
use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::{from_fn, Next};
use actix_web::{error::ErrorServiceUnavailable, post, web, App, HttpResponse, HttpServer};
use base64::Engine as _;
use mcp_supervisor::model::CallToolResult;
use mcp_supervisor::web::{status_scope_with, Visibility};
use mcp_supervisor::{CallTool, ServerConfig, Shutdown, Supervisor};

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

/// The `Authorization` header the operators send: Basic, user `ops`, `STATUS_PASSWORD`.
struct OperatorLogin(String);

/// Lets a request to the status routes through only with the operators' credentials, when
/// `STATUS_PASSWORD` configured them. HTTP Basic rather than a bearer token: a browser asks
/// for Basic credentials itself and sends them with the page's script, its `fetch` and its
/// event stream, where an `EventSource` cannot send an `Authorization` header of its own.
async fn operators_only<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    if let Some(login) = req.app_data::<web::Data<OperatorLogin>>() {
        let given = req.headers().get(header::AUTHORIZATION);
        if !given.is_some_and(|given| same(given.as_bytes(), login.0.as_bytes())) {
            let challenge = HttpResponse::Unauthorized()
                .insert_header((header::WWW_AUTHENTICATE, r#"Basic realm="MCP status""#))
                .finish();
            return Ok(req.into_response(challenge).map_into_right_body());
        }
    }
    Ok(next.call(req).await?.map_into_left_body())
}

/// Compares in time that does not depend on where the bytes differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |diff, (x, y)| diff | (x ^ y)) == 0
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
        let login = std::env::var("STATUS_PASSWORD").ok().map(|password| {
            let basic = base64::engine::general_purpose::STANDARD.encode(format!("ops:{password}"));
            web::Data::new(OperatorLogin(format!("Basic {basic}")))
        });
        // Guarded, the scope shows everything to whoever passes the guard; unguarded, only to
        // requests from this machine.
        let visibility = match login {
            Some(_) => Visibility::Full,
            None => Visibility::FullOnLoopback,
        };
        let (sup, data) = (supervisor.clone(), web::Data::new(supervisor.clone()));
        let server = HttpServer::new(move || {
            let mut app = App::new().app_data(data.clone()).service(call_tool);
            if let Some(login) = &login {
                app = app.app_data(login.clone());
            }
            app.service(status_scope_with(sup.clone(), visibility).wrap(from_fn(operators_only)))
        })
        .shutdown_timeout(5)
        .bind(("127.0.0.1", port))?;
        println!("listening on http://{}/status/page", server.addrs()[0]);
        server.run().await?;
        Ok(supervisor.send(Shutdown).await?)
    })
}
