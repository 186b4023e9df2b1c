//! A TCP relay that can cut every connection it carries at once: the network failing between
//! the supervisor and an HTTP server that stays up — or, stopped, a server that died.

type Relays = std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>;

/// A TCP relay to `target` that can cut every connection it carries at once: a network cut in
/// the middle of an SSE stream.
pub struct CuttingProxy {
    pub port: u16,
    connections: Relays,
    accept: tokio::task::JoinHandle<()>,
}

impl CuttingProxy {
    pub async fn start(target: u16) -> Self {
        Self::start_on(0, target).await
    }

    /// The relay listening on `port` (0: any): "the same server" back at its address.
    pub async fn start_on(port: u16, target: u16) -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections: Relays = Default::default();
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
                conns.lock().unwrap().push(relay);
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
        let conns = self.connections.lock().unwrap();
        for c in conns.iter() {
            c.abort();
        }
        conns.len()
    }

    /// The server at this address dies: every connection is closed and none is accepted, and
    /// when this returns the sockets are closed.
    pub async fn stop(self) {
        self.accept.abort();
        let relays: Vec<_> = std::mem::take(&mut *self.connections.lock().unwrap());
        for relay in &relays {
            relay.abort();
        }
        let _ = (&mut { self }.accept).await;
        for relay in relays {
            let _ = relay.await;
        }
    }
}

impl Drop for CuttingProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut_all();
    }
}
