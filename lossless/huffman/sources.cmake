# Canonical Huffman on the chunked-stream layer.
fzg_sources(CPU codebook.cc stored_book.cc huffman.cc huffman_cpu.cc CUDA histogram.cu huffman.cu)
