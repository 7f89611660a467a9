// GPU case: the data-movement ops as the strided-copy kernel the emitter
// launches (gdn/device/strided_copies.cuh): Qwen3-Next's split_qkvz with 3
// value heads per key head (v's parts do not tile the conv channels, so its
// row and slice pitches are unrelated), the conv channels regrouped by
// section for 2 groups and back, and a conv weight regrouped along rows (a
// single slice); bf16, checked against gdn-run (copies are exact:
// one misplaced element of these random inputs is an error of order 1).
func.func @copies_split_regroup(%qkvz: tensor<?x40xbf16>, %ba: tensor<?x12xbf16>,
                                %w: tensor<12x3xbf16>)
    -> (tensor<?x28xbf16>, tensor<?x6x2xbf16>, tensor<?x6xbf16>, tensor<?x6xbf16>,
        tensor<12x3xbf16>, tensor<?x28xbf16>) {
  %m, %z, %b, %a = gdn.split_qkvz %qkvz, %ba {key_heads = 2 : i64, head_dim_k = 4 : i64}
      : (tensor<?x40xbf16>, tensor<?x12xbf16>)
      -> (tensor<?x28xbf16>, tensor<?x6x2xbf16>, tensor<?x6xbf16>, tensor<?x6xbf16>)
  %grouped = gdn.regroup_sections %m {dim = 1 : i64, section_sizes = array<i64: 8, 8, 12>, groups = 2 : i64}
      : tensor<?x28xbf16> -> tensor<?x28xbf16>
  %back = gdn.regroup_sections %grouped {dim = 1 : i64, section_sizes = array<i64: 8, 8, 12>, groups = 2 : i64, inverse = true}
      : tensor<?x28xbf16> -> tensor<?x28xbf16>
  %rows = gdn.regroup_sections %w {dim = 0 : i64, section_sizes = array<i64: 3, 3, 6>, groups = 3 : i64}
      : tensor<12x3xbf16> -> tensor<12x3xbf16>
  return %grouped, %z, %b, %a, %rows, %back
      : tensor<?x28xbf16>, tensor<?x6x2xbf16>, tensor<?x6xbf16>, tensor<?x6xbf16>,
        tensor<12x3xbf16>, tensor<?x28xbf16>
}
