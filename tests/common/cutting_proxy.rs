//! A TCP relay that can cut every connection it carries at once: the network failing between
//! the supervisor and an HTTP server that stays up.

/// A TCP relay to `target` that can cut every connection it carries at once: a network cut in
/// the middle of an SSE stream.
pub struct CuttingProxy {
    pub port: u16,
    connections: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl CuttingProxy {
    pub async fn start(target: u16) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let conns = connections.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let relay = tokio::spawn(async move {
                    if let Ok(mut outbound) =
                        tokio::net::TcpStream::connect(("127.0.0.1", target)).await
                    {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                conns.lock().unwrap().push(relay.abort_handle());
            }
        });
        CuttingProxy {
            port,
            connections,
            accept,
        }
    }

    /// Drops every open connection (both sides see the socket close).
    pub fn cut_all(&self) -> usize {
        let mut conns = self.connections.lock().unwrap();
        let n = conns.len();
        for c in conns.drain(..) {
            c.abort();
        }
        n
    }
}

impl Drop for CuttingProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut_all();
    }
}
