// Joining connections, process 0's side: accepted from the listener, given the
// join timeout to present a join, admitted by the book (LivenessBook::Admit: the
// nonce, the id, the address), told on admission what they must know at once, or
// refused and closed.
#include "liveness/liveness_hub.h"

#include <utility>

#include "base/hmac_sha256.h"

namespace kdist {

void LivenessHub::AcceptJoining() {
  for (int i = 0; i < 1024; ++i) {  // bounded: the connections' frames wait meanwhile
    Accepted a = AcceptOne(listener_.fd.get());
    if (a.io.state != IoState::kDone) break;
    SetKeepalive(a.fd.get(), options_.keepalive);
    auto peer = std::make_unique<Peer>();
    peer->fd = std::move(a.fd);
    peer->join_by = clock_.Now() + options_.join_timeout;
    const uint64_t key = next_key_++;
    if (!poller_->Add(peer->fd.get(), key + kFirstPeerKey, false).ok()) {
      peer->fd.CloseWithReset();  // out of descriptors: it retries or times out
      continue;
    }
    peers_[key] = std::move(peer);
    unjoined_.push_back(key);
  }
}

Nanos LivenessHub::DropLateJoiners(Nanos now, Nanos next_expiry) {
  // The connections not admitted yet, in the order accepted (so by join_by).
  while (!unjoined_.empty()) {
    auto it = peers_.find(unjoined_.front());
    if (it == peers_.end() || it->second->process_id >= 0) {
      unjoined_.pop_front();
      continue;
    }
    if (now < it->second->join_by) {
      return std::min(next_expiry, it->second->join_by - now);
    }
    poller_->Remove(it->second->fd.get());
    it->second->fd.CloseWithReset();  // never admitted: not in admitted_
    peers_.erase(it);
    unjoined_.pop_front();
  }
  return next_expiry;
}

bool LivenessHub::AdmitOrRefuse(Peer& peer, const std::string& frame, bool& told) {
  Result<LiveJoin> join = DecodeLiveJoin(frame);
  const Status admission =
      join.ok() ? book_.Admit(*join, nonce_, PeerAddress(peer.fd.get())) : join.status();
  if (!admission.ok()) {
    // A member of this job that joins after a failure ended it (it joins
    // while JAX starts) hears that failure instead of waiting in JAX.
    if (join.ok() && book_.first_failure() && ConstantTimeEquals(join->nonce, nonce_)) {
      told = SendAll(peer.fd.get(), EncodeLiveNotice(*book_.first_failure()),
                     options_.send_timeout, clock_)
                 .ok();
      if (told) told_.insert(join->process_id);
    }
    return false;
  }
  peer.process_id = join->process_id;
  admitted_[peer.process_id] = &peer;
  barrier_book_.SetHost(join->process_id, join->host);
  LiveNotice admitted;
  admitted.kind = LiveKind::kAdmitted;
  admitted.process_id = join->process_id;
  (void)SendAll(peer.fd.get(), EncodeLiveNotice(admitted), options_.send_timeout, clock_);
  if (stop_book_.decided()) {
    // A stop step agreed before it joined: it stops there too.
    LiveNotice at;
    at.kind = LiveKind::kStopAt;
    const StopRequest& request = *stop_book_.request();
    at.process_id = request.process_id;
    at.host = request.host;
    at.pid = request.pid;
    at.signal_number = request.signal_number;
    at.message = request.reason;
    at.step = stop_book_.stop_step();
    (void)SendAll(peer.fd.get(), EncodeLiveNotice(at), options_.send_timeout, clock_);
  }
  return true;
}

}  // namespace kdist
