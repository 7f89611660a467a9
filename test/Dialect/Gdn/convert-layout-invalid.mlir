// Every error of gdn.convert_layout: dtype, rank, element type, global shape per layout, and the packing's token count.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @integer_input(%x: tensor<8192x16x128xi32>, %p: !gdn.packing<seqs = 4, tokens = 8192>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float or 64-bit float values, but got 'tensor<8192x16x128xi32>'}}
  %y = gdn.convert_layout %x, %p : (tensor<8192x16x128xi32>, !gdn.packing<seqs = 4, tokens = 8192>) -> tensor<2048x16x128xbf16, #gdn.seq<zigzag, ranks = 4>>
  return
}

// -----

// Zigzag cuts every sequence separately, so the packing is required.
func.func @packing_operand(%x: tensor<8192x16x128xbf16>, %p: tensor<5xi32>) {
  // expected-error @+1 {{operand #1 must be packed-sequence metadata (cu_seqlens, optional padded offsets), but got 'tensor<5xi32>'}}
  %y = gdn.convert_layout %x, %p : (tensor<8192x16x128xbf16>, tensor<5xi32>) -> tensor<2048x16x128xbf16, #gdn.seq<zigzag, ranks = 4>>
  return
}

// -----

func.func @scalar(%x: tensor<f32>, %p: !gdn.packing<seqs = 4, tokens = 8192>) {
  // expected-error @+1 {{x must be a [T, ...] tensor of rank >= 1, found 'tensor<f32>'}}
  %y = gdn.convert_layout %x, %p : (tensor<f32>, !gdn.packing<seqs = 4, tokens = 8192>) -> tensor<f32>
  return
}

// -----

func.func @element_type(%x: tensor<8192x16x128xbf16>, %p: !gdn.packing<seqs = 4, tokens = 8192>) {
  // expected-error @+1 {{changes only the layout; element types differ ('bf16' vs 'f32')}}
  %y = gdn.convert_layout %x, %p : (tensor<8192x16x128xbf16>, !gdn.packing<seqs = 4, tokens = 8192>) -> tensor<2048x16x128xf32, #gdn.seq<zigzag, ranks = 4>>
  return
}

// -----

// Merging heads is a reshape, not a layout change.
func.func @rank(%x: tensor<8192x16x128xbf16>, %p: !gdn.packing<seqs = 4, tokens = 8192>) {
  // expected-error @+1 {{changes only the layout; ranks differ (3 vs 2)}}
  %y = gdn.convert_layout %x, %p : (tensor<8192x16x128xbf16>, !gdn.packing<seqs = 4, tokens = 8192>) -> tensor<2048x2048xbf16, #gdn.seq<zigzag, ranks = 4>>
  return
}

// -----

// A shard of P ranks holds T / P rows.
func.func @shard_size(%x: tensor<8192x16x128xbf16>, %p: !gdn.packing<seqs = 4, tokens = 8192>) {
  // expected-error @+1 {{source and result describe different global tensors: dimension 0 is 8192 globally in natural but 8196 in #gdn.seq<zigzag, ranks = 4>}}
  %y = gdn.convert_layout %x, %p : (tensor<8192x16x128xbf16>, !gdn.packing<seqs = 4, tokens = 8192>) -> tensor<2049x16x128xbf16, #gdn.seq<zigzag, ranks = 4>>
  return
}

// -----

// A head shard of P ranks holds H / P heads.
func.func @heads_shard_size(%x: tensor<8192x16x128xbf16>, %p: !gdn.packing<seqs = 4, tokens = 8192>) {
  // expected-error @+1 {{source and result describe different global tensors: dimension 1 is 16 globally in natural but 32 in #gdn.heads<ranks = 4>}}
  %y = gdn.convert_layout %x, %p : (tensor<8192x16x128xbf16>, !gdn.packing<seqs = 4, tokens = 8192>) -> tensor<8192x8x128xbf16, #gdn.heads<ranks = 4>>
  return
}

// -----

// A head shard holds all tokens, not a token shard of them.
func.func @heads_tokens(%x: tensor<2048x16x128xbf16, #gdn.seq<contiguous, ranks = 4>>, %p: !gdn.packing<seqs = 4, tokens = 8192>) {
  // expected-error @+1 {{source and result describe different global tensors: dimension 0 is 8192 globally in #gdn.seq<contiguous, ranks = 4> but 2048 in #gdn.heads<ranks = 4>}}
  %y = gdn.convert_layout %x, %p : (tensor<2048x16x128xbf16, #gdn.seq<contiguous, ranks = 4>>, !gdn.packing<seqs = 4, tokens = 8192>) -> tensor<2048x4x128xbf16, #gdn.heads<ranks = 4>>
  return
}

// -----

func.func @inner_dimension(%x: tensor<8192x16x128xbf16>, %p: !gdn.packing<seqs = 4, tokens = 8192>) {
  // expected-error @+1 {{source and result describe different global tensors: dimension 2 is 128 globally in natural but 64 in #gdn.seq<zigzag, ranks = 4>}}
  %y = gdn.convert_layout %x, %p : (tensor<8192x16x128xbf16>, !gdn.packing<seqs = 4, tokens = 8192>) -> tensor<2048x16x64xbf16, #gdn.seq<zigzag, ranks = 4>>
  return
}

// -----

func.func @packing_tokens(%x: tensor<8192x16x128xbf16>, %p: !gdn.packing<seqs = 4, tokens = 4096>) {
  // expected-error @+1 {{the packing describes 4096 tokens but the tensor has 8192 globally}}
  %y = gdn.convert_layout %x, %p : (tensor<8192x16x128xbf16>, !gdn.packing<seqs = 4, tokens = 4096>) -> tensor<2048x16x128xbf16, #gdn.seq<zigzag, ranks = 4>>
  return
}

// -----

// The packing is global: a shard of 1024 rows over 4 ranks is 4096 tokens.
func.func @packing_tokens_of_shard(%x: tensor<1024x16x128xbf16, #gdn.seq<zigzag, ranks = 4>>, %p: !gdn.packing<seqs = 4, tokens = 8192>) {
  // expected-error @+1 {{the packing describes 8192 tokens but the tensor has 4096 globally}}
  %y = gdn.convert_layout %x, %p : (tensor<1024x16x128xbf16, #gdn.seq<zigzag, ranks = 4>>, !gdn.packing<seqs = 4, tokens = 8192>) -> tensor<4096x16x128xbf16>
  return
}

// -----

func.func @nested_shard(%x: tensor<512x16xbf16, #gdn.seq<zigzag, ranks = 4, inner = 2>>, %p: !gdn.packing<seqs = 4, tokens = 4096>) {
  // expected-error @+1 {{cannot convert #gdn.seq<zigzag, ranks = 4, inner = 2>: it spans the SP and CP groups; gather it over the SP group first (gdn_comm.all_gather, dim = 0)}}
  %y = gdn.convert_layout %x, %p : (tensor<512x16xbf16, #gdn.seq<zigzag, ranks = 4, inner = 2>>, !gdn.packing<seqs = 4, tokens = 4096>) -> tensor<4096x16xbf16>
  return
}
