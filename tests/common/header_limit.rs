//! A relay in front of an HTTP server that refuses requests whose head is over a limit the way
//! Node's HTTP server does (16 KiB by default): it answers `431` and destroys the socket with
//! the rest of the request unread, which resets the connection while the client may still be
//! writing. The request never reaches the server behind it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// See the module.
pub struct HeaderLimit {
    pub port: u16,
    refused: Arc<AtomicUsize>,
    accept: tokio::task::JoinHandle<()>,
}

impl HeaderLimit {
    /// Relays to `target`, refusing request heads over `limit` bytes.
    pub async fn start(target: u16, limit: usize) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let refused = Arc::new(AtomicUsize::new(0));
        let counted = refused.clone();
        let accept = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let counted = counted.clone();
                tokio::spawn(async move {
                    let Ok(outbound) = TcpStream::connect(("127.0.0.1", target)).await else {
                        return;
                    };
                    relay(inbound, outbound, limit, counted).await;
                });
            }
        });
        HeaderLimit {
            port,
            refused,
            accept,
        }
    }

    /// Requests refused so far.
    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }
}

impl Drop for HeaderLimit {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// One connection: each request's head is read and checked before it goes on (requests one
/// after the other, as HTTP/1.1 clients send them without pipelining); answers flow back as
/// they come.
async fn relay(inbound: TcpStream, outbound: TcpStream, limit: usize, refused: Arc<AtomicUsize>) {
    let (mut from_client, mut to_client) = inbound.into_split();
    let (mut from_server, mut to_server) = outbound.into_split();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let back = tokio::spawn(async move {
        tokio::select! {
            _ = tokio::io::copy(&mut from_server, &mut to_client) => {}
            _ = stopped => {}
        }
        to_client
    });
    let mut buffer = Vec::new();
    let mut chunk = vec![0u8; 8192];
    loop {
        let end = loop {
            if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break Some(at + 4);
            }
            if buffer.len() > limit {
                break None;
            }
            match from_client.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        let Some(end) = end else {
            refused.fetch_add(1, Ordering::SeqCst);
            let _ = stop.send(());
            let Ok(to_client) = back.await else { return };
            let Ok(mut socket) = from_client.reunite(to_client) else {
                return;
            };
            let _ = socket
                .write_all(b"HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
                .await;
            // Closed (not shut down) with the rest of the request unread: the kernel resets
            // the connection, as `socket.destroy()` does in Node.
            drop(socket);
            return;
        };
        let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        while buffer.len() < end + length {
            match from_client.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        if to_server.write_all(&buffer[..end + length]).await.is_err() {
            return;
        }
        buffer.drain(..end + length);
    }
}
