moe.model @m(vocab_size = 256, hidden_size = 64) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  llvm.unreachable
}
